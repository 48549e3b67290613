// Package webhook receives Forgejo (and Gitea) webhooks on /hooks/forgejo.
//
// Webhooks only wake agents: a delivery is verified (HMAC-SHA256 of the
// body with the shared secret, hex in X-Forgejo-Signature or
// X-Gitea-Signature), parsed into a typed Event, mapped from its
// repository to the projects that use it and from its type to the roles
// that care, and each (project, role) is triggered; the scheduler debounces.
// The handler answers at once. Polling stays the source of truth, so a
// lost delivery costs latency only.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/logx"
)

// Path is where the daemon serves the receiver.
const Path = "/hooks/forgejo"

// SecretEnv is the environment variable holding the shared secret.
const SecretEnv = "DISINTO_WEBHOOK_SECRET"

// DefaultMaxBody caps a delivery's size (push payloads can be large).
const DefaultMaxBody = 4 << 20

// Triggerer wakes one job; the scheduler implements it.
type Triggerer interface {
	Trigger(project, role string) bool
}

// Event is the part of a delivery the daemon uses.
type Event struct {
	// Type is the fine-grained event type (issue_label, pull_request_sync…).
	Type   string
	Repo   string // owner/name as sent
	Action string
	Number int64 // issue or pull request number, 0 if none
}

type payload struct {
	Action     string `json:"action"`
	Number     int64  `json:"number"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Issue *struct {
		Number int64 `json:"number"`
	} `json:"issue"`
	PullRequest *struct {
		Number int64 `json:"number"`
	} `json:"pull_request"`
}

// ErrBadPayload is wrapped by ParseEvent for bodies it cannot use.
var ErrBadPayload = errors.New("bad webhook payload")

// ParseEvent decodes a delivery of the given event type.
func ParseEvent(eventType string, body []byte) (Event, error) {
	if eventType == "" {
		return Event{}, fmt.Errorf("%w: no event type header", ErrBadPayload)
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrBadPayload, err)
	}
	if p.Repository == nil || !strings.Contains(p.Repository.FullName, "/") {
		return Event{}, fmt.Errorf("%w: no repository full_name", ErrBadPayload)
	}
	ev := Event{Type: eventType, Repo: p.Repository.FullName, Action: p.Action, Number: p.Number}
	switch {
	case p.Issue != nil:
		ev.Number = p.Issue.Number
	case p.PullRequest != nil && ev.Number == 0:
		ev.Number = p.PullRequest.Number
	}
	return ev, nil
}

// Roles returns the roles an event type of a project repository wakes,
// from the role table (each row's Wakes); nil means the event is ignored.
func Roles(eventType string) []config.Role {
	return config.EventRoles(eventType)
}

// Options configures a Handler.
type Options struct {
	Secret []byte
	// Projects maps a repository full name (owner/name, any case) to the
	// names of the projects that use it; Ops maps an ops repository's to
	// the projects whose ops repository it is. An event of a project
	// repository wakes the roles whose row names its type (Wakes); any
	// event of an ops repository wakes the roles that watch it
	// (WakesOnOps).
	Projects map[string][]string
	Ops      map[string][]string
	Trigger  Triggerer
	Log      zerolog.Logger
	// MaxBody caps the request body (default DefaultMaxBody).
	MaxBody int64
	// Observe, if set, sees the result of every delivery: "accepted",
	// "ignored", "unauthorized", "bad_request" (metrics).
	Observe func(eventType, result string)
}

// Handler is the webhook receiver. It is safe for concurrent use.
type Handler struct {
	opts       Options
	repos, ops map[string][]string
}

// New returns a Handler. An empty secret is an error: unsigned webhooks are
// never accepted.
func New(opts Options) (*Handler, error) {
	if len(opts.Secret) == 0 {
		return nil, fmt.Errorf("webhook secret is empty; set %s", SecretEnv)
	}
	if opts.Trigger == nil {
		return nil, errors.New("webhook: no triggerer")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	return &Handler{opts: opts, repos: lowerKeys(opts.Projects), ops: lowerKeys(opts.Ops)}, nil
}

// lowerKeys folds the repository names of m to lower case, merging those
// that differ only in case.
func lowerKeys(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for repo, ps := range m {
		k := strings.ToLower(repo)
		out[k] = append(out[k], ps...)
	}
	return out
}

// target is one (project, role) an event wakes.
type target struct {
	project string
	role    config.Role
}

// targets are the (project, role) pairs ev wakes: the roles of its type
// for every project of its repository, and the ops watchers for every
// project whose ops repository it is. An event type no role wants wakes
// nothing, in either.
func (h *Handler) targets(ev Event) []target {
	roles := Roles(ev.Type)
	if len(roles) == 0 {
		return nil
	}
	repo := strings.ToLower(ev.Repo)
	var out []target
	for _, p := range h.repos[repo] {
		for _, r := range roles {
			out = append(out, target{p, r})
		}
	}
	for _, p := range h.ops[repo] {
		for _, r := range config.OpsEventRoles() {
			out = append(out, target{p, r})
		}
	}
	return out
}

// Sign returns the hex HMAC-SHA256 of body, as Forgejo sends it.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (h *Handler) verify(r *http.Request, body []byte) bool {
	sig := r.Header.Get("X-Forgejo-Signature")
	if sig == "" {
		sig = r.Header.Get("X-Gitea-Signature")
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
	if sig == "" || err != nil {
		return false
	}
	m := hmac.New(sha256.New, h.opts.Secret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

func eventType(r *http.Request) string {
	for _, k := range []string{"X-Forgejo-Event-Type", "X-Gitea-Event-Type", "X-Forgejo-Event", "X-Gitea-Event"} {
		if v := r.Header.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// ServeHTTP verifies, parses and dispatches one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	typ := eventType(r)
	log := h.opts.Log.With().Str("event", typ).Str("delivery", firstHeader(r, "X-Forgejo-Delivery", "X-Gitea-Delivery")).
		Str("remote", r.RemoteAddr).Logger()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// A declared length over the cap is refused before reading a byte;
	// an undeclared one is cut off at the cap.
	if r.ContentLength > h.opts.MaxBody {
		log.Warn().Int64("length", r.ContentLength).Msg("webhook rejected: body too large")
		h.observe(typ, "bad_request")
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBody))
	if err != nil {
		code, msg := readFailure(err)
		log.Warn().Err(err).Msg("webhook rejected: " + msg)
		h.observe(typ, "bad_request")
		http.Error(w, msg, code)
		return
	}
	if !h.verify(r, body) {
		log.Warn().Msg("webhook rejected: missing or bad signature")
		h.observe(typ, "unauthorized")
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	ev, err := ParseEvent(typ, body)
	if err != nil {
		log.Warn().Err(err).Msg("webhook rejected")
		h.observe(typ, "bad_request")
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	targets := h.targets(ev)
	if len(targets) == 0 {
		log.Debug().Str("repo", ev.Repo).Msg("webhook ignored: no project or no interested role")
		h.observe(typ, "ignored")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	for _, t := range targets {
		if h.opts.Trigger.Trigger(t.project, string(t.role)) {
			log.Info().Str(logx.KeyProject, t.project).Str("role", string(t.role)).Str("action", ev.Action).
				Int64("number", ev.Number).Msg("webhook triggered agent")
		}
	}
	h.observe(typ, "accepted")
	w.WriteHeader(http.StatusAccepted)
}

// readFailure classifies a failed body read: over the cap, too slow (the
// server's read timeout), or cut short.
func readFailure(err error) (int, string) {
	var tooLarge *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "body too large"
	case errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout, "body not received in time"
	}
	return http.StatusBadRequest, "unreadable body"
}

func (h *Handler) observe(typ, result string) {
	if h.opts.Observe != nil {
		// The header is caller-controlled; keep metric labels bounded.
		if Roles(typ) == nil {
			typ = "other"
		}
		h.opts.Observe(typ, result)
	}
}

func firstHeader(r *http.Request, keys ...string) string {
	for _, k := range keys {
		if v := r.Header.Get(k); v != "" {
			return v
		}
	}
	return ""
}
