package dev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/provenance"
)

// How far the agent takes a change alone ([autonomy] of the project):
// at level auto it merges on green CI and the review bot's approval; at
// approve it merges only once a maintainer also approved the head; at
// advisory it never merges. Whatever the level, a change touching a
// protected path is merged only once a maintainer approved its head, and
// the session's commits that touch one are pushed to a branch only once
// a maintainer approved exactly that commit (hold.go), so CI never runs
// a session's workflow with the repository's secrets first.
//
// A maintainer is a user with write access to the repository who is not
// one of the factory's bots. A maintainer's approval of a commit is on
// the forge's record, by its author: a formal approval of the pull
// request at that commit, or a comment on the issue or the pull request
// with the line "/approve <full commit id>". The full id is required: a
// session can mint a later commit whose abbreviated id is the approved
// one's.

// approveCommand begins the line of a maintainer's approval comment.
const approveCommand = "/approve"

// level is the autonomy level of the work on st's issue: the project's
// for dev, and at most approve for an outsider's word (lib/provenance),
// so outsider text never merges without a maintainer.
func (a *Agent) level(st State) config.AutonomyLevel {
	l := a.o.Autonomy.RoleLevel(config.RoleDev)
	if st.Origin == provenance.Outsider {
		l = l.Cap(config.AutonomyApprove)
	}
	return l
}

// protectedFiles returns the files of a diff's file list that touch a
// protected path.
func (a *Agent) protectedFiles(files []string) []string { return a.o.Autonomy.Protected(files) }

// isMaintainer reports whether login's approval counts: not the agent,
// not one of the factory's bots, and with write access to the repository.
// The forge tells only a repository admin who may write; when it will
// not tell the dev bot, the configured maintainers (project file,
// FORGE_ADMIN_USERS or the repository's owners) stand in for its answer.
func (a *Agent) isMaintainer(ctx context.Context, login string) (bool, error) {
	if login == "" {
		return false, nil
	}
	me, err := a.identity(ctx)
	if err != nil {
		return false, err
	}
	same := func(s string) bool { return strings.EqualFold(strings.TrimPrefix(strings.TrimSpace(s), "@"), login) }
	if same(me) || slices.ContainsFunc(a.bots(), same) {
		return false, nil
	}
	for _, b := range a.o.ChoreBots {
		if same(b) {
			return false, nil
		}
	}
	p, err := a.o.Forge.CollaboratorPermission(ctx, login)
	switch {
	case err == nil:
		return p.CanWrite(), nil
	case errors.Is(err, forge.ErrNotFound):
		return false, nil
	case errors.Is(err, forge.ErrForbidden):
		return slices.ContainsFunc(a.o.Maintainers, same), nil
	}
	return false, err
}

// approvesCommit reports whether body holds the line "/approve <sha>",
// sha in full.
func approvesCommit(body, sha string) bool {
	if sha == "" {
		return false
	}
	for line := range strings.SplitSeq(body, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == approveCommand && strings.EqualFold(f[1], sha) {
			return true
		}
	}
	return false
}

// approvedBy returns the maintainer who approved commit sha in reviews (a
// formal approval at sha, not dismissed) or comments (an approve line);
// "" when no maintainer did. Each author is asked about once.
func (a *Agent) approvedBy(ctx context.Context, sha string, reviews []forge.Review, comments []forge.Comment) (string, error) {
	var cands []string
	for _, r := range slices.Backward(reviews) {
		if r.State == forge.ReviewApprove && !r.Dismissed && sha != "" && strings.EqualFold(r.CommitID, sha) {
			cands = append(cands, r.Author)
		}
	}
	for _, c := range slices.Backward(comments) {
		if approvesCommit(c.Body, sha) {
			cands = append(cands, c.Author)
		}
	}
	asked := map[string]bool{}
	for _, who := range cands {
		if asked[strings.ToLower(who)] {
			continue
		}
		asked[strings.ToLower(who)] = true
		ok, err := a.isMaintainer(ctx, who)
		if err != nil {
			return "", err
		}
		if ok {
			return who, nil
		}
	}
	return "", nil
}

// approvalOf returns the maintainer who approved commit sha of st's work,
// on the pull request (formal reviews, comments) or on the issue
// (comments); "" when none did yet.
func (a *Agent) approvalOf(ctx context.Context, st *State, sha string) (string, error) {
	var reviews []forge.Review
	comments, err := a.o.Forge.ListComments(ctx, st.Issue)
	if err != nil {
		return "", err
	}
	if st.PR > 0 {
		if reviews, err = a.o.Forge.ListReviews(ctx, st.PR); err != nil {
			return "", err
		}
		pc, err := a.o.Forge.ListComments(ctx, st.PR)
		if err != nil {
			return "", err
		}
		comments = append(comments, pc...)
	}
	return a.approvedBy(ctx, sha, reviews, comments)
}

// note is one comment of the agent's that says what a wait waits for,
// kept as one comment and edited when that changes.
type note struct {
	// ID is the comment's; 0 before the first.
	ID int64 `json:"id,omitempty"`
	// Hash is of the body last written, so an unchanged note costs no
	// request.
	Hash string `json:"hash,omitempty"`
}

// markerWait is the marker kind of a note:
// <!-- disinto:dev-wait issue=<n> kind=<push|merge> -->.
const markerWait = "dev-wait"

// waitMarker renders the marker of the note of kind on issue n's work.
func waitMarker(n int64, kind string) string {
	m, err := forge.Marker{Kind: markerWait, Fields: map[string]string{"issue": strconv.FormatInt(n, 10), "kind": kind}}.String()
	if err != nil {
		return ""
	}
	return m
}

// putNote writes body (with its marker) as the note of kind on number
// target (the issue or its pull request): the comment *n names, else the
// agent's comment carrying the marker, else a new one. It changes *n; the
// caller saves the state.
func (a *Agent) putNote(ctx context.Context, st *State, n *note, target int64, kind, body string) error {
	body = strings.TrimRight(body, "\n") + "\n" + waitMarker(st.Issue, kind)
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:8])
	if n.ID != 0 && n.Hash == hash {
		return nil
	}
	if n.ID == 0 {
		me, err := a.identity(ctx)
		if err != nil {
			return err
		}
		cs, err := a.o.Forge.ListComments(ctx, target)
		if err != nil {
			return err
		}
		for _, c := range slices.Backward(cs) {
			m, ok := c.MarkerBy(markerWait, me)
			if ok && m.Fields["issue"] == strconv.FormatInt(st.Issue, 10) && m.Fields["kind"] == kind {
				n.ID = c.ID
				break
			}
		}
	}
	if n.ID != 0 {
		_, err := a.o.Forge.EditComment(ctx, n.ID, body)
		if err == nil {
			n.Hash = hash
			return nil
		}
		if !errors.Is(err, forge.ErrNotFound) {
			return err
		}
	}
	c, err := a.o.Forge.CreateComment(ctx, target, body)
	if err != nil {
		return err
	}
	n.ID, n.Hash = c.ID, hash
	return nil
}

// maxNoteDiff bounds the diff of protected files a note quotes; the rest
// is read on the forge.
const maxNoteDiff = 48 << 10

// protectedDiff is the part of diff that touches protected paths,
// clipped for a note.
func (a *Agent) protectedDiff(diff string) (text, cut string) {
	return patch.Truncate(patch.Only(diff, a.o.Autonomy.Protects), maxNoteDiff)
}
