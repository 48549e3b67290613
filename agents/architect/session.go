package architect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
)

// The session's outbox: the complete sprint document, and its reply (the
// comments to post and whether the design is final).
const (
	SprintFile = "sprint.md"
	ReplyFile  = "reply.json"
	EnvSprint  = "DISINTO_SPRINT_FILE"
	EnvReply   = "DISINTO_REPLY_FILE"

	maxSprint   = 128 << 10
	maxReply    = 64 << 10
	maxComments = 10
	maxComment  = 16 << 10
)

// Mode is what a session is asked to do.
type Mode string

// Modes of a session (the formula's "mode" variable).
const (
	ModePitch     Mode = "pitch"
	ModeQuestions Mode = "questions"
	ModeAnswers   Mode = "answers"
)

// Reply is the typed reply of a design session.
type Reply struct {
	// Comments are posted on the sprint pull request, in order.
	Comments []string `json:"comments"`
	// Ready says every design fork is resolved and the sprint is final.
	Ready bool `json:"ready"`
}

// ParseReply reads a reply strictly: known fields only, at most
// maxComments non-empty comments of at most maxComment bytes.
func ParseReply(data []byte) (Reply, error) {
	var r Reply
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Reply{}, fmt.Errorf("%s: %w", ReplyFile, err)
	}
	if len(r.Comments) > maxComments {
		return Reply{}, fmt.Errorf("%s: %d comments, at most %d", ReplyFile, len(r.Comments), maxComments)
	}
	for i, c := range r.Comments {
		switch {
		case strings.TrimSpace(c) == "":
			return Reply{}, fmt.Errorf("%s: comments[%d] is empty", ReplyFile, i)
		case len(c) > maxComment:
			return Reply{}, fmt.Errorf("%s: comments[%d] is %d bytes, at most %d", ReplyFile, i, len(c), maxComment)
		}
	}
	return r, nil
}

// sessionIn is one session's task.
type sessionIn struct {
	branch string
	mode   Mode
	vision forge.Issue
	pr     int64
	// blocks are the full context; followUp, when set, is the prompt of
	// a resumed session (the full prompt is then only the recovery of a
	// lost session).
	blocks   []formula.Block
	followUp func(env map[string]string) string
}

// sessionOut is what a session left in its outbox.
type sessionOut struct {
	// sprint is the sprint document, nil when the session wrote none.
	sprint []byte
	reply  Reply
	// replyErr is why the reply was refused (nil when it was fine or
	// absent).
	replyErr error
	res      claude.Result
}

// session runs one session of in.mode in the empty scratch directory of
// the sprint's workspace, with no credential in its environment and no
// nudge, and reads back its outbox. A pitch starts a new conversation; a
// design session resumes the sprint's own.
func (p *pass) session(ctx context.Context, in sessionIn) (sessionOut, error) {
	o := p.a.o
	ws, err := o.Driver.Workspace(workspaceKey(o.Project, in.branch)...)
	if err != nil {
		return sessionOut{}, fmt.Errorf("architect: %w", err)
	}
	for _, f := range []string{SprintFile, ReplyFile} {
		if err := os.Remove(ws.Out(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return sessionOut{}, err
		}
	}
	env := map[string]string{EnvSprint: ws.Out(SprintFile), EnvReply: ws.Out(ReplyFile)}
	prompt, f, err := p.render(ctx, in, env)
	if err != nil {
		return sessionOut{}, err
	}
	s := formulaagent.Scratch{Workspace: ws, Fresh: in.mode == ModePitch, Prompt: prompt, Formula: f, Env: env,
		Label: strings.TrimPrefix(in.branch, "architect/")}
	c := &claude.Conversation{Store: o.Sessions, Key: sessionKey(o.Project, in.branch)}
	switch {
	case in.mode == ModePitch || o.Sessions == nil:
		c.New = true
	case in.followUp != nil && stored(o.Sessions, c.Key):
		// The conversation holds the rest; should the CLI have lost it,
		// the full prompt starts a new one.
		c.Recovery, s.Prompt = prompt, in.followUp(env)
	}
	s.Conversation = c
	res, err := o.Driver.Converse(ctx, s)
	out := sessionOut{res: res}
	if err != nil {
		return out, fmt.Errorf("architect %s session for #%d: %w", in.mode, in.vision.Number, err)
	}
	if data, _, err := atomicfile.ReadUntrusted(ws.Out(SprintFile), maxSprint); err == nil {
		out.sprint = data
	}
	if data, _, err := atomicfile.ReadUntrusted(ws.Out(ReplyFile), maxReply); err == nil {
		out.reply, out.replyErr = ParseReply(data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		out.replyErr = fmt.Errorf("%s: %w", ReplyFile, err)
	}
	return out, nil
}

// render renders the formula in force for in, with the project's and the
// ops repository's context files read through the forge; it returns the
// formula it rendered.
func (p *pass) render(ctx context.Context, in sessionIn, env map[string]string) (string, *formula.Formula, error) {
	o := p.a.o
	var vars []formula.EnvVar
	for _, k := range []string{EnvReply, EnvSprint} {
		vars = append(vars, formula.EnvVar{Name: k, Value: env[k]})
	}
	pr := "(not opened yet)"
	if in.pr > 0 {
		pr = "#" + strconv.FormatInt(in.pr, 10)
	}
	out, f, err := o.Driver.Prompt(ctx, formula.RenderInput{
		Vars: map[string]string{"project": o.Project, "mode": string(in.mode), "vision_issue": strconv.FormatInt(in.vision.Number, 10),
			"sprint_pr": pr, "sprint_file": env[EnvSprint], "reply_file": env[EnvReply]},
		RepoFS: forgeFS{ctx: ctx, get: o.Forge.GetFile, ref: o.Primary},
		OpsFS:  forgeFS{ctx: ctx, get: o.Ops.GetFile, ref: o.OpsPrimary},
		Blocks: in.blocks, Env: vars,
	})
	if err != nil {
		return "", nil, fmt.Errorf("architect: render the formula: %w", err)
	}
	return out, f, nil
}

// stored reports whether store holds a conversation for k (a corrupt
// entry counts: Continue then starts afresh with the full prompt).
func stored(store *claude.SessionStore, k claude.SessionKey) bool {
	_, ok, err := store.Load(k)
	return ok || err != nil
}

// sessionKey names a sprint's conversation: one per sprint branch, so
// one per sprint pull request (W-AR-3).
func sessionKey(project, branch string) claude.SessionKey {
	return claude.SessionKey{Project: project, Subject: strings.ReplaceAll(strings.TrimPrefix(branch, "architect/"), "/", "-")}
}

// forgeFS serves files of a repository at ref through the forge's
// contents API: the context files a formula names, without a clone.
type forgeFS struct {
	ctx context.Context
	get func(ctx context.Context, path, ref string) (forge.File, error)
	ref string
}

// ReadFile implements fs.ReadFileFS.
func (f forgeFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	file, err := f.get(f.ctx, name, f.ref)
	if errors.Is(err, forge.ErrNotFound) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return file.Content, nil
}

// Open implements fs.FS.
func (f forgeFS) Open(name string) (fs.File, error) {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), name: path.Base(name), size: int64(len(data))}, nil
}

// memFile is a file read whole from the forge.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m, nil }
func (m *memFile) Close() error               { return nil }
func (m *memFile) Name() string               { return m.name }
func (m *memFile) Size() int64                { return m.size }
func (m *memFile) Mode() fs.FileMode          { return 0o444 }
func (m *memFile) ModTime() time.Time         { return time.Time{} }
func (m *memFile) IsDir() bool                { return false }
func (m *memFile) Sys() any                   { return nil }

var _ fs.ReadFileFS = forgeFS{}
