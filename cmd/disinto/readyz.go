package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// forgeProbeTTL is how long one answer of the forge's health is reused:
// health checks must not become a load on the forge.
const forgeProbeTTL = 10 * time.Second

// readiness answers /readyz: ready when every bot token authenticates,
// every forge answers, and no job has failed every run for longer than
// the policy allows. Liveness (/healthz) says only that the daemon
// serves.
type readiness struct {
	d *daemon

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
	seen := map[string]bool{}
	for _, p := range r.d.cfg.Projects {
		if seen[p.ForgeURL] {
			continue
		}
		seen[p.ForgeURL] = true
		if err := r.forge(ctx, p.ForgeURL); err != nil {
			out = append(out, fmt.Sprintf("forge %s unreachable: %s", p.ForgeURL, r.d.redactor.Error(err)))
		}
	}
	now := time.Now()
	for _, f := range r.d.failing() {
		if now.Sub(f.Since) >= r.d.cfg.Policy.UnhealthyAfter {
			out = append(out, fmt.Sprintf("%s %s: every run failed since %s (%s, %d times)", f.Project, f.Role,
				f.Since.UTC().Format(time.RFC3339), f.Code, f.Count))
		}
	}
	return out
}

// forge reports whether the forge at url answers its version endpoint,
// asking at most once per forgeProbeTTL.
func (r *readiness) forge(ctx context.Context, url string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.probed[url]; ok && time.Since(p.at) < forgeProbeTTL {
		return p.err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(url, "/")+"/api/v1/version", nil)
		if err != nil {
			return err
		}
		resp, err := r.d.services.http.Do(req)
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
