package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// Mode is how a request reached the ops repository.
type Mode string

// Request modes.
const (
	ModeDirect Mode = "direct" // committed to the primary branch
	ModePR     Mode = "pr"     // proposed as a pull request
)

// BranchPrefix starts the branch of every vault pull request: vault/<id>.
const BranchPrefix = "vault/"

// Request errors.
var (
	// ErrNoVaultIdentity: the vault bot's identity is not configured, and
	// nothing else may commit an action.
	ErrNoVaultIdentity = errors.New("the vault identity is not configured (FORGE_VAULT_TOKEN and its password)")
	// ErrDuplicateID: another action with this id exists, with other
	// content, or has run.
	ErrDuplicateID = errors.New("an action with this id exists already")
)

// Receipt says where a request landed.
type Receipt struct {
	ID   string
	Tier Tier
	Mode Mode
	// PR and URL are the pull request (ModePR).
	PR  int64
	URL string
	// Commit is the direct commit (ModeDirect); "" when the action was
	// on the primary branch already.
	Commit string
	// Existing reports that an earlier request of the same action made
	// it; nothing new was created.
	Existing bool
}

// requestForge is what a Requester needs of the ops repository's forge.
type requestForge interface {
	ops.PullRequests
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	EnsureLabels(ctx context.Context) ([]forge.LabelName, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
}

var _ requestForge = (*forge.RepoClient)(nil)

// RequestOptions configures a Requester.
type RequestOptions struct {
	// Ops is the ops checkout acting as the vault identity; Forge is the
	// ops repository on the forge as the same identity. Both required.
	Ops   *ops.Repo
	Forge requestForge
	// Formulas are the formulas the runner executes (see Validator).
	Formulas fs.FS
	Log      zerolog.Logger
}

// Requester files vault actions: the typed API every agent uses instead
// of holding a credential.
type Requester struct{ o RequestOptions }

// NewRequester returns a Requester; ErrNoVaultIdentity without the vault
// identity's checkout or forge client.
func NewRequester(o RequestOptions) (*Requester, error) {
	if o.Ops == nil || o.Forge == nil {
		return nil, ErrNoVaultIdentity
	}
	return &Requester{o: o}, nil
}

// Encode renders a as an action file.
func Encode(a Action) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	type file struct {
		ID             string            `toml:"id"`
		Formula        string            `toml:"formula"`
		Context        string            `toml:"context"`
		Secrets        []string          `toml:"secrets"`
		Model          string            `toml:"model,omitempty"`
		TimeoutMinutes int               `toml:"timeout_minutes,omitempty"`
		BlastRadius    string            `toml:"blast_radius,omitempty"`
		Vars           map[string]string `toml:"vars,omitempty"`
	}
	secrets := a.Secrets
	if secrets == nil {
		secrets = []string{}
	}
	err := enc.Encode(file{ID: a.ID, Formula: a.Formula, Context: a.Context, Secrets: secrets,
		Model: a.Model, TimeoutMinutes: a.TimeoutMinutes, BlastRadius: a.BlastRadius.String(), Vars: a.Vars})
	return b.Bytes(), err
}

// RequestAction files a, encoded as its action file (see Request).
func (q *Requester) RequestAction(ctx context.Context, a Action) (Receipt, error) {
	content, err := Encode(a)
	if err != nil {
		return Receipt{}, fmt.Errorf("vault request %s: %w", a.ID, err)
	}
	return q.Request(ctx, content)
}

// Request files the action file content (TOML) and returns its receipt.
// It validates first and creates nothing when the action is invalid. A
// low-tier action is committed to the primary branch as the vault
// identity, with dispatch_mode = "direct" as its first line; any other
// tier (or a low one that asks for "pr", or a primary branch that takes
// no direct commits) is proposed as the pull request "vault: <id>" from
// vault/<id>, labelled vault and pending-approval. Requests are
// idempotent by id: the same action again returns the first receipt; an
// other action under a taken id is ErrDuplicateID.
func (q *Requester) Request(ctx context.Context, content []byte) (Receipt, error) {
	var head struct {
		ID string `toml:"id"`
	}
	if _, err := toml.Decode(string(content), &head); err == nil && !ValidID(head.ID) {
		return Receipt{}, fmt.Errorf("vault request: %q is not an action id", head.ID)
	}
	pol, err := q.policy(ctx)
	if err != nil {
		return Receipt{}, err
	}
	path := ActionPath(head.ID)
	if head.ID == "" {
		path = "vault request"
	}
	a, err := Validator{Formulas: q.o.Formulas, Policy: pol}.Parse(path, content)
	if err != nil {
		return Receipt{}, err
	}
	r := Receipt{ID: a.ID, Tier: pol.Classify(a)}
	if done, err := q.existing(ctx, a, content, &r); err != nil || done {
		return r, err
	}
	if r.Tier == TierLow && a.DispatchMode != "pr" {
		err := q.direct(ctx, a, content, &r)
		if !errors.Is(err, ops.ErrProtected) {
			return r, err
		}
		q.o.Log.Info().Str("action", a.ID).Msg("the ops primary branch takes no direct commits: proposing the low-tier action as a pull request")
	}
	return r, q.propose(ctx, a, content, &r)
}

// policy reads vault/policy.toml from the primary branch; DefaultPolicy
// when there is none.
func (q *Requester) policy(ctx context.Context) (*Policy, error) {
	data, err := q.o.Ops.Read(ctx, PolicyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("vault request: %w", err)
	}
	return ParsePolicy(PolicyPath, data)
}

// existing fills r from an earlier request of the same action: the file
// on the primary branch, or a result. Another action under the id is
// ErrDuplicateID.
func (q *Requester) existing(ctx context.Context, a Action, content []byte, r *Receipt) (bool, error) {
	have, err := q.o.Ops.Read(ctx, ActionPath(a.ID))
	switch {
	case err == nil:
		if !sameAction(have, content) {
			return true, fmt.Errorf("vault request %s: %w on the ops primary branch", a.ID, ErrDuplicateID)
		}
		r.Existing, r.Mode = true, ModeDirect
		if !bytes.HasPrefix(have, []byte(directLine)) {
			r.Mode = ModePR
			if pr, err := q.o.Forge.FindPullByHead(ctx, BranchPrefix+a.ID); err == nil && !pr.FromFork {
				r.PR, r.URL = pr.Number, pr.URL
			}
		}
		return true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return true, fmt.Errorf("vault request %s: %w", a.ID, err)
	}
	if _, err := q.o.Ops.Read(ctx, ResultPath(a.ID)); err == nil {
		return true, fmt.Errorf("vault request %s: %w and has a result", a.ID, ErrDuplicateID)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("vault request %s: %w", a.ID, err)
	}
	return false, nil
}

// directLine is the first line of a directly committed action.
const directLine = `dispatch_mode = "direct"` + "\n"

// sameAction reports whether the file on the forge is the requested
// content, allowing for the line a direct commit adds.
func sameAction(have, content []byte) bool {
	return bytes.Equal(have, content) || bytes.Equal(have, append([]byte(directLine), content...))
}

// direct commits the action to the primary branch.
func (q *Requester) direct(ctx context.Context, a Action, content []byte, r *Receipt) error {
	data := content
	if a.DispatchMode == "" {
		data = append([]byte(directLine), content...)
	}
	path := ActionPath(a.ID)
	var dup bool
	sha, err := q.o.Ops.Commit(ctx, fmt.Sprintf("vault: add %s (low tier)", a.ID), func(f ops.Files) ([]git.FileChange, error) {
		have, err := f.Read(path)
		switch {
		case err == nil:
			dup = !sameAction(have, content)
			return nil, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		return []git.FileChange{{Path: path, Content: data}}, nil
	})
	if err != nil {
		return fmt.Errorf("vault request %s: %w", a.ID, err)
	}
	if dup {
		return fmt.Errorf("vault request %s: %w on the ops primary branch", a.ID, ErrDuplicateID)
	}
	r.Mode, r.Commit, r.Existing = ModeDirect, sha, sha == ""
	q.o.Log.Info().Str("action", a.ID).Str("commit", sha).Msg("vault action committed (low tier)")
	return nil
}

// propose opens (or finds) the action's pull request.
func (q *Requester) propose(ctx context.Context, a Action, content []byte, r *Receipt) error {
	branch := BranchPrefix + a.ID
	pr, err := q.o.Ops.Propose(ctx, q.o.Forge, ops.Proposal{
		Branch: branch, Title: "vault: " + a.ID, Body: prBody(a, r.Tier),
		Message: "vault: add " + a.ID,
		Changes: []git.FileChange{{Path: ActionPath(a.ID), Content: content}},
	})
	if err != nil {
		return fmt.Errorf("vault request %s: %w", a.ID, err)
	}
	f, err := q.o.Forge.GetFile(ctx, ActionPath(a.ID), pr.HeadSHA)
	if err != nil {
		return fmt.Errorf("vault request %s: read #%d: %w", a.ID, pr.Number, err)
	}
	if !bytes.Equal(f.Content, content) {
		return fmt.Errorf("vault request %s: %w in pull request #%d", a.ID, ErrDuplicateID, pr.Number)
	}
	r.Mode, r.PR, r.URL = ModePR, pr.Number, pr.URL
	r.Existing = pr.State != forge.StateOpen || pr.Merged
	if pr.State == forge.StateOpen {
		// Labels tell a human what waits; a missing label costs nothing else.
		if _, err := q.o.Forge.EnsureLabels(ctx); err != nil {
			q.o.Log.Warn().Err(err).Msg("vault labels")
		} else if err := q.o.Forge.AddLabels(ctx, pr.Number, forge.LabelVault, forge.LabelPendingApproval); err != nil {
			q.o.Log.Warn().Err(err).Int64("pr", pr.Number).Msg("vault labels")
		}
	}
	q.o.Log.Info().Str("action", a.ID).Int64("pr", pr.Number).Str("tier", r.Tier.String()).Msg("vault action proposed")
	return nil
}

// prBody describes the action to the approving human. The context is the
// requesting agent's text: neutralised, so it carries no marker.
func prBody(a Action, t Tier) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Vault action `%s` (%s blast radius).\n\n", a.ID, t)
	fmt.Fprintf(&b, "Context: %s\n\n", forge.Neutralise(a.Context))
	fmt.Fprintf(&b, "Formula: `%s`\n\n", a.Formula)
	secrets := "none"
	if len(a.Secrets) > 0 {
		secrets = "`" + strings.Join(a.Secrets, "`, `") + "`"
	}
	fmt.Fprintf(&b, "Secrets: %s\n\n", secrets)
	b.WriteString("It runs once, after an administrator of this repository approves this pull request ")
	b.WriteString("at its final commit and it is merged. A commit pushed after the approval needs a new approval.\n")
	return b.String()
}
