package formulaagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/rs/zerolog"
)

// ErrNoRunner means a session was asked of a runner without a formula,
// a model runner or a sandbox.
var ErrNoRunner = errors.New("no formula, model runner or sandbox")

// Prompt renders the role's formula in force with in, the role, project,
// bot's lessons and logger filled in. It returns the formula it
// rendered, whose model bounds the session.
func (r *Driver) Prompt(ctx context.Context, in formula.RenderInput) (string, *formula.Formula, error) {
	f := r.Formula(ctx)
	if f == nil {
		return "", nil, ErrNoRunner
	}
	in.Role, in.Project, in.Lessons, in.Logger = r.o.Role, r.o.Project, r.Lessons(ctx), r.o.Log
	out, err := formula.Render(f, in)
	if err != nil {
		return "", f, err
	}
	return out, f, nil
}

// Workspace returns the workspace of the role's sandbox named by parts
// (sandbox.Key).
func (r *Driver) Workspace(parts ...string) (*sandbox.Workspace, error) {
	if r.o.Sandbox == nil {
		return nil, ErrNoRunner
	}
	return r.o.Sandbox.Workspace(sandbox.Key(parts...))
}

// RemoveWorkspace removes the workspace named by parts, if any.
func (r *Driver) RemoveWorkspace(parts ...string) error {
	if r.o.Sandbox == nil {
		return nil
	}
	return r.o.Sandbox.Remove(sandbox.Key(parts...))
}

// Scratch is one session of the role: in Dir of Workspace, or in its
// scratch directory (emptied first when Fresh) when Dir is empty.
type Scratch struct {
	Workspace *sandbox.Workspace
	Dir       string
	Fresh     bool
	// Label is appended to the role's label of the session.
	Label string
	// Prompt is the rendered formula (Prompt); Formula the formula it
	// came from.
	Prompt  string
	Formula *formula.Formula
	Env     map[string]string
	// Conversation, when set, resumes or starts a stored conversation.
	Conversation *claude.Conversation
}

// Converse runs the session s within the role's bounds.
func (r *Driver) Converse(ctx context.Context, s Scratch) (claude.Result, error) {
	if r.o.Claude == nil || s.Formula == nil {
		return claude.Result{}, fmt.Errorf("%s: %w", r.o.Role, ErrNoRunner)
	}
	label := r.label()
	if s.Label != "" {
		label = r.label(s.Label)
	}
	return claude.Call(ctx, r.o.Claude, claude.Spec{Label: label, Prompt: s.Prompt, Workspace: s.Workspace, Dir: s.Dir,
		Fresh: s.Fresh, Bounds: r.bounds(s.Formula), Env: s.Env, Conversation: s.Conversation})
}

// Graph is the structural analysis of a project shown to a session
// (orphans, cycles, thin objectives, bottlenecks).
type Graph interface {
	// Context returns the analysis as text, "" when there is none.
	Context(ctx context.Context) (string, error)
}

// GraphBlock is the block of g's analysis, redacted and fenced as
// untrusted; none when g is nil or has nothing. An analysis that fails
// costs the session that block, not the run.
func GraphBlock(ctx context.Context, g Graph, red *redact.Redactor, log zerolog.Logger) []formula.Block {
	if g == nil {
		return nil
	}
	text, err := g.Context(ctx)
	if err != nil {
		log.Warn().Str("error", red.String(err.Error())).Msg("structural analysis unavailable")
		return nil
	}
	if text == "" {
		return nil
	}
	return []formula.Block{{Title: "Structural analysis", Body: red.String(text), Untrusted: true}}
}
