package claude

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/sandbox"
)

// Bounds are what a session may use: the model and backend, its turns and
// its wall time. Zero values leave the runner's defaults.
type Bounds struct {
	Model, Backend string
	MaxTurns       int
	Timeout        time.Duration
}

// Or fills the zero values of b from def.
func (b Bounds) Or(def Bounds) Bounds {
	if b.Model == "" {
		b.Model = def.Model
	}
	if b.Backend == "" {
		b.Backend = def.Backend
	}
	if b.MaxTurns <= 0 {
		b.MaxTurns = def.MaxTurns
	}
	if b.Timeout <= 0 {
		b.Timeout = def.Timeout
	}
	return b
}

// Capped fills the zero turns and timeout of b from max, and lowers those
// above it to it.
func (b Bounds) Capped(max Bounds) Bounds {
	if b.MaxTurns <= 0 || b.MaxTurns > max.MaxTurns {
		b.MaxTurns = max.MaxTurns
	}
	if b.Timeout <= 0 || b.Timeout > max.Timeout {
		b.Timeout = max.Timeout
	}
	return b
}

// Conversation says which stored conversation a session belongs to.
type Conversation struct {
	Store *SessionStore
	Key   SessionKey
	// New starts a new conversation and stores it under Key, replacing
	// whatever was there. Otherwise the stored one is continued
	// (Continue): a lost one starts afresh with Recovery before the
	// prompt.
	New      bool
	Recovery string
}

// Spec is what a caller asks of one session; Call turns it into the
// Invocation, the only place one is built.
type Spec struct {
	// Label names the run in logs and transcripts.
	Label  string
	Prompt string
	// Workspace confines the run (nil: none, tests). Dir is the working
	// directory, a checkout inside the workspace; empty means the
	// workspace's scratch directory, made and handed to the workspace's
	// identity, emptied first when Fresh.
	Workspace *sandbox.Workspace
	Dir       string
	Fresh     bool
	Bounds    Bounds
	// Env holds the session's extra variables (outbox paths), never a
	// credential.
	Env map[string]string
	// System is appended to the system prompt.
	System string
	// ResumeID continues the conversation of that id, kept by the caller
	// (--resume; the CLI finds it only from the directory it ran in).
	// Conversation, when set, resumes or starts a conversation the store
	// keeps instead; with neither, the session starts one.
	ResumeID     string
	Conversation *Conversation
	Logger       *zerolog.Logger
}

// Call runs the session s describes with r.
func Call(ctx context.Context, r Runner, s Spec) (Result, error) {
	inv, err := s.invocation()
	if err != nil {
		return Result{}, err
	}
	c := s.Conversation
	switch {
	case c == nil || c.Store == nil:
		return r.Run(ctx, inv)
	case c.New:
		res, err := r.Run(ctx, inv)
		if err == nil && ValidSessionID(res.SessionID) {
			err = c.Store.Save(c.Key, res.SessionID, inv.Dir)
		}
		return res, err
	}
	return Continue(ctx, r, c.Store, c.Key, inv, c.Recovery)
}

// Scratch returns ws's scratch directory, made and handed to the
// workspace's identity; fresh empties it first.
func Scratch(ws *sandbox.Workspace, fresh bool) (string, error) {
	dir := ws.Repo()
	if fresh {
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	if err := ws.Own(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// invocation builds the Invocation of s, making its scratch directory
// when it runs in one.
func (s Spec) invocation() (Invocation, error) {
	dir := s.Dir
	if dir == "" && s.Workspace != nil {
		var err error
		if dir, err = Scratch(s.Workspace, s.Fresh); err != nil {
			return Invocation{}, err
		}
	}
	return Invocation{Prompt: s.Prompt, ResumeID: s.ResumeID, Dir: dir, Workspace: s.Workspace, Model: s.Bounds.Model, Backend: s.Bounds.Backend,
		MaxTurns: s.Bounds.MaxTurns, Timeout: s.Bounds.Timeout, Env: s.Env, AppendSystemPrompt: s.System,
		Label: s.Label, Logger: s.Logger}, nil
}
