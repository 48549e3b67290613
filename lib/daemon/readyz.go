package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// forgeProbeTTL is how long one answer of the forge's health is reused:
// health checks must not become a load on the forge. A tick that fails
// after the answer was given makes it stale at once, so a forge that stops
// is noticed at the first tick it fails, not a TTL later.
const forgeProbeTTL = 10 * time.Second

// readiness answers /readyz: ready when every bot token authenticates,
// every forge answers, and no job has failed every run for longer than
// the policy allows. Liveness (/healthz) says only that the daemon
// serves. The same probes feed disinto_forge_up.
type readiness struct {
	d *Daemon

	mu     sync.Mutex
	probed map[string]probe // by forge URL
}

type probe struct {
	at  time.Time
	err error
}

// problems lists why the daemon is not ready, one line each.
func (r *readiness) problems(ctx context.Context) []string {
	var out []string
	for _, dr := range r.d.gates.disabled() {
		out = append(out, fmt.Sprintf("%s %s disabled: %s", dr.Project, dr.Role, dr.Reason))
	}
	failing := r.d.failing()
	answers := r.forges(ctx, failing)
	seen := map[string]bool{}
	for _, p := range r.d.Config.Projects {
		if err := answers[p.ForgeURL]; err != nil && !seen[p.ForgeURL] {
			out = append(out, fmt.Sprintf("forge %s unreachable: %s", p.ForgeURL, r.d.Redactor.Error(err)))
		}
		seen[p.ForgeURL] = true
	}
	now := time.Now()
	for _, f := range failing {
		if now.Sub(f.Since) >= r.d.Config.Policy.UnhealthyAfter {
			out = append(out, fmt.Sprintf("%s %s: every run failed since %s (%s, %d times)", f.Project, f.Role,
				f.Since.UTC().Format(time.RFC3339), f.Code, f.Count))
		}
	}
	return out
}

// forges probes the forge of every project (each URL once), records in
// the metrics whether each project's forge answers, and returns the
// answers by URL. failing are the jobs' failure streaks: one that began
// after a cached answer makes that answer stale.
func (r *readiness) forges(ctx context.Context, failing []agent.Failing) map[string]error {
	byName := map[string]*config.Project{}
	lastFail := map[string]time.Time{} // by forge URL
	for _, p := range r.d.Config.Projects {
		byName[p.Name] = p
	}
	for _, f := range failing {
		if p, ok := byName[f.Project]; ok && f.Since.After(lastFail[p.ForgeURL]) {
			lastFail[p.ForgeURL] = f.Since
		}
	}
	out := map[string]error{}
	for _, p := range r.d.Config.Projects {
		err, ok := out[p.ForgeURL]
		if !ok {
			err = r.forge(ctx, p.ForgeURL, lastFail[p.ForgeURL])
			out[p.ForgeURL] = err
		}
		if r.d.Metrics != nil {
			r.d.Metrics.SetForgeUp(p.Name, err == nil)
		}
	}
	return out
}

// observe probes the forges (within the TTL) before next serves, so that
// a scrape of /metrics reads a current disinto_forge_up.
func (r *readiness) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.forges(req.Context(), r.d.failing())
		next.ServeHTTP(w, req)
	})
}

// forge reports whether the forge at url answers its version endpoint,
// asking at most once per forgeProbeTTL unless a tick failed after the
// last answer (failedAt).
func (r *readiness) forge(ctx context.Context, url string, failedAt time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.probed[url]; ok && time.Since(p.at) < forgeProbeTTL && !failedAt.After(p.at) {
		return p.err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/api/v1/version", nil)
		if err != nil {
			return err
		}
		resp, err := r.d.Services.HTTP.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}()
	if r.probed == nil {
		r.probed = map[string]probe{}
	}
	r.probed[url] = probe{at: time.Now(), err: err}
	return err
}

// serve answers 200 "ready" or 503 with the problems.
func (r *readiness) serve(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	problems := r.problems(req.Context())
	if len(problems) == 0 {
		_, _ = w.Write([]byte("ready\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("not ready:\n- " + strings.Join(problems, "\n- ") + "\n"))
}
