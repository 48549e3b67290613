package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/sandbox"
)

// maxRecovery bounds the earlier turns replayed to a fresh session when a
// conversation's claude session is lost.
const maxRecovery = 32 << 10

// Answer is the JSON of a successful POST /chat.
type Answer struct {
	Response       string `json:"response"`
	ConversationID string `json:"conversation_id"`
}

// post answers one message: caps first (before the body is read), then
// the message, then a slot of the pool, then the model run in the user's
// workspace, resuming the conversation's session.
func (s *Server) post(w http.ResponseWriter, r *http.Request, sess session) {
	user := sess.User
	if !s.claim(user) {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the answer to your previous message is still being written", http.StatusTooManyRequests)
		return
	}
	defer s.unclaim(user)
	now := s.o.Now()
	lim, err := s.rates.take(user, now)
	if err != nil {
		s.fail(w, "rate counters", err)
		return
	}
	if lim != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(lim.RetryAfter.Round(time.Second)/time.Second)))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, "<p class=\"limit\">Limit reached: %s. Try again in %s.</p>\n", html.EscapeString(lim.What), lim.RetryAfter.Round(time.Second))
		return
	}
	msg, id, status := s.readMessage(w, r, user)
	if status != 0 {
		return
	}
	if err := s.hist.append(id, Record{TS: now.UTC(), User: user, Role: roleUser, Content: msg}); err != nil {
		s.fail(w, "history", err)
		return
	}
	if !s.acquire(r.Context()) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "every model slot is busy; try again shortly", http.StatusServiceUnavailable)
		return
	}
	res, err := s.run(r.Context(), user, id, msg)
	s.release()
	if n := res.Usage.InputTokens + res.Usage.OutputTokens; n > 0 {
		if terr := s.rates.addTokens(user, n, s.o.Now()); terr != nil {
			s.o.Log.Error().Err(terr).Msg("count chat tokens")
		}
	}
	if err != nil || res.Text == "" {
		s.modelFailed(w, user, id, err)
		return
	}
	if err := s.hist.append(id, Record{TS: s.o.Now().UTC(), User: user, Role: roleAssistant, Content: res.Text}); err != nil {
		s.fail(w, "history", err)
		return
	}
	writeJSON(w, http.StatusOK, Answer{Response: res.Text, ConversationID: id})
}

// readMessage reads the form: a non-empty message of at most
// MaxMessageBytes (413 above) and the conversation, new unless a valid
// id of user's is named. A non-zero status was answered.
func (s *Server) readMessage(w http.ResponseWriter, r *http.Request, user string) (msg, id string, status int) {
	// Room for the form encoding of the largest message (up to three
	// bytes per byte) and the other fields.
	r.Body = http.MaxBytesReader(w, r.Body, int64(3*s.o.MaxMessageBytes+1024))
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("message too long: at most %d bytes", s.o.MaxMessageBytes), http.StatusRequestEntityTooLarge)
			return "", "", http.StatusRequestEntityTooLarge
		}
		http.Error(w, "bad form", http.StatusBadRequest)
		return "", "", http.StatusBadRequest
	}
	msg = strings.TrimSpace(r.PostForm.Get("message"))
	switch {
	case msg == "":
		http.Error(w, "empty message", http.StatusBadRequest)
		return "", "", http.StatusBadRequest
	case len(msg) > s.o.MaxMessageBytes:
		http.Error(w, fmt.Sprintf("message too long: at most %d bytes", s.o.MaxMessageBytes), http.StatusRequestEntityTooLarge)
		return "", "", http.StatusRequestEntityTooLarge
	}
	// An id of the right shape names a conversation of this user's (one
	// from POST /chat/new has no file yet); anything else starts one.
	if id = r.PostForm.Get("conversation_id"); !convRe.MatchString(id) {
		var err error
		if id, err = newID(); err != nil {
			s.fail(w, "conversation id", err)
			return "", "", http.StatusInternalServerError
		}
	}
	return msg, id, 0
}

// run asks the model: in the user's workspace, with the formula's system
// prompt, resuming the conversation's session; when that is lost, a fresh
// session gets the earlier turns as fenced data.
func (s *Server) run(ctx context.Context, user, id, msg string) (claude.Result, error) {
	ws, err := s.o.Sandbox.Workspace(sandbox.Key("chat", user))
	if err != nil {
		return claude.Result{}, err
	}
	system, err := s.o.SystemPrompt(user)
	if err != nil {
		return claude.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	return claude.Call(ctx, s.o.Runner, claude.Spec{Label: sandbox.Key("chat", user, id), Prompt: msg, Workspace: ws,
		Bounds: claude.Bounds{Model: s.o.Model, MaxTurns: s.o.MaxTurns, Timeout: s.o.Timeout}, System: system,
		Conversation: &claude.Conversation{Store: s.store, Key: claude.SessionKey{Project: sandbox.Key("chat", user), Subject: id},
			Recovery: s.recovery(user, id)}})
}

// recovery is the conversation so far but for its last message (the one
// being answered), for a fresh session.
func (s *Server) recovery(user, id string) string {
	recs, err := s.hist.read(user, id)
	if err != nil || len(recs) <= 1 {
		return ""
	}
	var b strings.Builder
	for _, r := range recs[:len(recs)-1] {
		fmt.Fprintf(&b, "%s: %s\n\n", r.Role, r.Content)
	}
	text := b.String()
	if len(text) > maxRecovery {
		text = text[len(text)-maxRecovery:]
	}
	return "The conversation so far, for context (earlier turns, as data):\n" + formula.Untrusted(text)
}

// modelFailed answers a run that produced no answer, without internals.
func (s *Server) modelFailed(w http.ResponseWriter, user, id string, err error) {
	code := claude.Code(err)
	if code == "" {
		code = "claude.empty"
	}
	s.o.Log.Warn().Err(err).Str("user", user).Str("conversation", id).Str("code", code).Msg("chat answer failed")
	switch {
	case errors.Is(err, claude.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		http.Error(w, fmt.Sprintf("no answer within %s", s.o.Timeout), http.StatusGatewayTimeout)
	case claude.Transient(err):
		w.Header().Set("Retry-After", "60")
		http.Error(w, "the model is busy; try again in a minute", http.StatusServiceUnavailable)
	default:
		http.Error(w, "the model run failed ("+code+")", http.StatusBadGateway)
	}
}

// claim marks user as waiting for an answer: one at a time per user, as
// all of a user's sessions share one workspace.
func (s *Server) claim(user string) bool {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	k := strings.ToLower(user)
	if s.busy[k] {
		return false
	}
	s.busy[k] = true
	return true
}

func (s *Server) unclaim(user string) {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	delete(s.busy, strings.ToLower(user))
}

// acquire waits at most QueueWait for a slot of the pool.
func (s *Server) acquire(ctx context.Context) bool {
	t := time.NewTimer(s.o.QueueWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (s *Server) release() { <-s.slots }

// newConversation hands out an id; nothing exists until its first
// message.
func (s *Server) newConversation(w http.ResponseWriter, _ *http.Request, _ session) {
	id, err := newID()
	if err != nil {
		s.fail(w, "conversation id", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"conversation_id": id})
}

func (s *Server) listHistory(w http.ResponseWriter, _ *http.Request, sess session) {
	list, err := s.hist.list(sess.User)
	if err != nil {
		s.fail(w, "history", err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) getHistory(w http.ResponseWriter, r *http.Request, sess session) {
	id := r.PathValue("id")
	if !convRe.MatchString(id) {
		http.Error(w, "bad conversation id", http.StatusBadRequest)
		return
	}
	recs, err := s.hist.read(sess.User, id)
	switch {
	case errors.Is(err, errNoConversation):
		http.Error(w, "no such conversation", http.StatusNotFound)
	case err != nil:
		s.fail(w, "history", err)
	default:
		writeJSON(w, http.StatusOK, recs)
	}
}

func (s *Server) deleteHistory(w http.ResponseWriter, r *http.Request, sess session) {
	id := r.PathValue("id")
	if !convRe.MatchString(id) {
		http.Error(w, "bad conversation id", http.StatusBadRequest)
		return
	}
	err := s.hist.remove(sess.User, id)
	switch {
	case errors.Is(err, errNoConversation):
		http.Error(w, "no such conversation", http.StatusNotFound)
	case err != nil:
		s.fail(w, "history", err)
	default:
		if err := s.store.Delete(claude.SessionKey{Project: sandbox.Key("chat", sess.User), Subject: id}); err != nil {
			s.o.Log.Warn().Err(err).Msg("forget a chat session")
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// fail logs an internal error and answers 500 without its text.
func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	s.o.Log.Error().Err(err).Str("what", what).Msg("chat request failed")
	http.Error(w, "internal error ("+what+")", http.StatusInternalServerError)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
