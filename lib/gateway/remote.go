package gateway

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Paths of the grant API a shared gateway serves to the daemons that use
// it (`disinto gateway`), behind its admin token.
const (
	grantPath = "/v1/disinto/grants"
	closePath = "/v1/disinto/grants/close"
)

// MinAdminToken is the shortest admin token a shared gateway accepts.
const MinAdminToken = 16

// Granted is a run's key as its runner holds it: the key the session
// authenticates with, and, once closed, what the run used and the budget
// that stopped it.
type Granted interface {
	Token() string
	// Close revokes the key and returns what the run used.
	Close() Usage
	// Refused is the budget that stopped the run, or nil; known for sure
	// once Close returned.
	Refused() error
}

// Granter grants keys: a gateway of this process, or a shared one
// (Remote).
type Granter interface {
	Grant(Grant) (Granted, error)
}

// Token implements Granted.
func (l *Lease) Token() string { return l.Key }

// Grant implements Granter.
func (g *Gateway) Grant(gr Grant) (Granted, error) {
	l, err := g.Open(gr)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// wireGrant is a Grant on the wire (a zone by name).
type wireGrant struct {
	Project string `json:"project"`
	Role    string `json:"role"`
	Run     string `json:"run"`
	Backend string `json:"backend"`
	Limits  Limits `json:"limits"`
	TZ      string `json:"tz,omitempty"`
}

// wireClose is what closing a key answers.
type wireClose struct {
	Usage   Usage        `json:"usage"`
	Refused *BudgetError `json:"refused,omitempty"`
}

// serveGrants answers the grant API; it reports whether r was one of its
// requests.
func (g *Gateway) serveGrants(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || (r.URL.Path != grantPath && r.URL.Path != closePath) {
		return false
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if g.admin == "" || !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(g.admin)) != 1 {
		writeError(w, http.StatusUnauthorized, "authentication_error", "the grant API needs the gateway's admin token")
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == closePath {
		var req struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return true
		}
		g.mu.Lock()
		l := g.leases[req.Key]
		g.mu.Unlock()
		if l == nil {
			writeError(w, http.StatusNotFound, "not_found_error", "no such key")
			return true
		}
		out := wireClose{Usage: l.Close()}
		_ = errors.As(l.Refused(), &out.Refused)
		_ = json.NewEncoder(w).Encode(out)
		return true
	}
	var wg wireGrant
	if err := json.Unmarshal(body, &wg); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return true
	}
	gr := Grant{Project: wg.Project, Role: wg.Role, Run: wg.Run, Backend: wg.Backend, Limits: wg.Limits}
	if wg.TZ != "" {
		if gr.TZ, err = time.LoadLocation(wg.TZ); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "tz: "+err.Error())
			return true
		}
	}
	l, err := g.Open(gr)
	var be *BudgetError
	switch {
	case errors.As(err, &be):
		w.WriteHeader(http.StatusConflict)
		_ = json.NewEncoder(w).Encode(wireClose{Refused: be})
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
	default:
		_ = json.NewEncoder(w).Encode(map[string]string{"key": l.Key})
	}
	return true
}

// Remote is a gateway another process serves (`disinto gateway`), shared
// by the daemons of several containers: its keys, budgets and backend
// limits hold across all of them.
type Remote struct {
	// URL is the gateway as the sessions and this process reach it.
	URL string
	// Token is its admin token (DISINTO_GATEWAY_TOKEN).
	Token string
	// Client makes the grant requests; a 30 s client when nil.
	Client *http.Client
}

// remoteTimeout bounds a grant request.
const remoteTimeout = 30 * time.Second

// Grant implements Granter.
func (r *Remote) Grant(gr Grant) (Granted, error) {
	wg := wireGrant{Project: gr.Project, Role: gr.Role, Run: gr.Run, Backend: gr.Backend, Limits: gr.Limits}
	if gr.TZ != nil {
		wg.TZ = gr.TZ.String()
	}
	var out struct {
		Key string `json:"key"`
		wireClose
	}
	status, err := r.call(grantPath, wg, &out)
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusConflict && out.Refused != nil:
		return nil, out.Refused
	case status != http.StatusOK || out.Key == "":
		return nil, fmt.Errorf("gateway %s: grant answered %d", r.URL, status)
	}
	return &remoteLease{r: r, key: out.Key}, nil
}

// call posts v to path and decodes the answer into out.
func (r *Remote) call(path string, v, out any) (int, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(r.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("gateway %s: %w", r.URL, err)
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	c := r.Client
	if c == nil {
		c = &http.Client{Timeout: remoteTimeout}
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("gateway %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return resp.StatusCode, fmt.Errorf("gateway %s refused the admin token (DISINTO_GATEWAY_TOKEN)", r.URL)
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out)
	return resp.StatusCode, nil
}

// remoteLease is a key of a Remote gateway.
type remoteLease struct {
	r       *Remote
	key     string
	refused error
	once    sync.Once
	usage   Usage
}

func (l *remoteLease) Token() string  { return l.key }
func (l *remoteLease) Refused() error { return l.refused }

// Close implements Granted. A gateway that cannot be told loses the
// run's figures, not its key: the key dies with the gateway's restart at
// the latest, and the runner records no usage rather than a guess.
func (l *remoteLease) Close() Usage {
	l.once.Do(func() {
		var out wireClose
		if _, err := l.r.call(closePath, map[string]string{"key": l.key}, &out); err != nil {
			return
		}
		if out.Refused != nil {
			l.refused = out.Refused
		}
		l.usage = out.Usage
	})
	return l.usage
}

// The environment of a shared gateway: where `disinto gateway` listens,
// and, for the daemons that use it, its URL as their sessions reach it
// and its admin token (on both sides).
const (
	ListenEnv = "DISINTO_GATEWAY_LISTEN"
	URLEnv    = "DISINTO_GATEWAY_URL"
	TokenEnv  = "DISINTO_GATEWAY_TOKEN"
)
