package forge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// claimTTL is how long an orphaned claim comment (its writer died before
// finishing) keeps blocking others, judged on server timestamps.
const claimTTL = 5 * time.Minute

// Claim records what a successful claim changed, so Release can undo it.
type Claim struct {
	Issue   int64
	Login   string
	Added   []LabelName
	Removed []LabelName
}

// Claim makes issue n ours: it fails with ErrClaimed if anyone holds it or
// wins a concurrent attempt. The protocol is race-free across processes and
// identities: contenders post a claim comment and the oldest live one wins
// (comment ids are totally ordered); the winner assigns itself, re-reads to
// verify, applies labels (adds in-progress, removes backlog) and only then
// deletes its claim comment. A loser deletes its comment and leaves no
// trace. Claims of the same login from two processes exclude each other
// too (each comment carries a nonce). An issue already assigned, even to
// us, is reported as ErrClaimed: resuming one's own work is the caller's
// decision.
//
// Only claim comments written by the acting identity or by one of bots
// (the factory's identities) take part: anyone may post a comment that
// looks like a claim, and if it counted it would make a bot give up a
// claim it won, or, posted again and again, keep every bot off the issue.
func (r *RepoClient) Claim(ctx context.Context, n int64, bots []string) (Claim, error) {
	me, err := r.c.Me(ctx)
	if err != nil {
		return Claim{}, err
	}
	issue, err := r.GetIssue(ctx, n)
	if err != nil {
		return Claim{}, err
	}
	if len(issue.Assignees) > 0 || issue.State != StateOpen {
		return Claim{}, fmt.Errorf("claim %s#%d: held by %v: %w", r.slug, n, issue.Assignees, ErrClaimed)
	}
	nonce, err := newNonce()
	if err != nil {
		return Claim{}, err
	}
	fields := map[string]string{"by": me.Login, "nonce": nonce}
	if r.c.instance != "" {
		fields["instance"] = r.c.instance
	}
	body, err := Marker{Kind: MarkerClaim, Fields: fields}.String()
	if err != nil {
		return Claim{}, err
	}
	mine, err := r.CreateComment(ctx, n, body)
	if err != nil {
		// The forge may have applied the post although its answer was
		// lost; left there, the comment would make every later claim of
		// ours lose to it until it expires.
		r.dropClaim(context.WithoutCancel(ctx), n, me.Login, nonce)
		return Claim{}, err
	}
	// Cleanup must happen even if ctx is cancelled meanwhile.
	cleanup := func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := r.DeleteComment(cctx, mine.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		return nil
	}
	won, err := r.oldestClaim(ctx, n, mine, append([]string{me.Login}, bots...))
	if err == nil && !won {
		err = fmt.Errorf("claim %s#%d: lost the race: %w", r.slug, n, ErrClaimed)
	}
	if err == nil {
		// A winner deletes its claim comment only after assigning itself,
		// so a contender that no longer sees it must see the assignee.
		err = r.checkFree(ctx, n)
	}
	if err == nil {
		err = r.assignAndVerify(ctx, n, me.Login)
	}
	if err != nil {
		if cerr := cleanup(); cerr != nil {
			return Claim{}, errors.Join(err, fmt.Errorf("delete claim comment: %w", cerr))
		}
		return Claim{}, err
	}
	c := Claim{Issue: n, Login: me.Login, Added: []LabelName{LabelInProgress}}
	if issue.HasLabel(LabelBacklog) {
		c.Removed = []LabelName{LabelBacklog}
	}
	err = r.AddLabels(ctx, n, c.Added...)
	if err == nil {
		err = r.RemoveLabels(ctx, n, c.Removed...)
	}
	if err != nil {
		return Claim{}, errors.Join(err, r.Release(context.WithoutCancel(ctx), c), cleanup())
	}
	// The claim holds even if the comment cannot be deleted now: the
	// assignee turns later contenders away and the comment expires after
	// claimTTL.
	_ = cleanup()
	return c, nil
}

// dropClaim deletes, best effort, the claim comment of login with nonce
// on issue n, if the forge has one.
func (r *RepoClient) dropClaim(ctx context.Context, n int64, login, nonce string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := r.ListComments(ctx, n)
	if err != nil {
		return
	}
	for _, c := range cs {
		if !WrittenBy(c.Author, login) {
			continue
		}
		for _, m := range ParseMarkers(c.Body) {
			if m.Kind == MarkerClaim && m.Fields["nonce"] == nonce {
				_ = r.DeleteComment(ctx, c.ID)
			}
		}
	}
}

// oldestClaim reports whether mine is the oldest live claim comment on n
// written by one of contenders.
func (r *RepoClient) oldestClaim(ctx context.Context, n int64, mine Comment, contenders []string) (bool, error) {
	comments, err := r.ListComments(ctx, n)
	if err != nil {
		return false, err
	}
	for _, c := range comments {
		if c.ID >= mine.ID {
			break
		}
		if !slices.ContainsFunc(contenders, func(l string) bool { return l != "" && strings.EqualFold(l, c.Author) }) {
			continue // a look-alike written by someone else
		}
		m, ok := FindMarker(c.Body, MarkerClaim)
		if !ok {
			continue
		}
		if mine.Created.Sub(c.Created) > claimTTL {
			continue // orphaned by a crashed contender
		}
		if r.c.instance != "" && m.Fields["instance"] == r.c.instance && strings.EqualFold(c.Author, mine.Author) {
			// Our own claim from before a restart: this instance runs
			// once, so nobody finishes that claim any more.
			if err := r.DeleteComment(ctx, c.ID); err != nil && !errors.Is(err, ErrNotFound) {
				return false, err
			}
			continue
		}
		return false, nil
	}
	return true, nil
}

// checkFree fails with ErrClaimed if n is assigned or closed.
func (r *RepoClient) checkFree(ctx context.Context, n int64) error {
	issue, err := r.GetIssue(ctx, n)
	if err != nil {
		return err
	}
	if len(issue.Assignees) > 0 || issue.State != StateOpen {
		return fmt.Errorf("claim %s#%d: held by %v: %w", r.slug, n, issue.Assignees, ErrClaimed)
	}
	return nil
}

// assignAndVerify assigns n to login, then re-reads to check nobody else
// (a human, a stale writer) holds it.
func (r *RepoClient) assignAndVerify(ctx context.Context, n int64, login string) error {
	if err := r.SetAssignees(ctx, n, []string{login}); err != nil {
		return err
	}
	got, err := r.GetIssue(ctx, n)
	if err != nil {
		return err
	}
	if len(got.Assignees) != 1 || got.Assignees[0] != login {
		return fmt.Errorf("claim %s#%d: assignees now %v: %w", r.slug, n, got.Assignees, ErrClaimed)
	}
	return nil
}

// Release undoes a claim: unassigns (if still ours), removes the labels the
// claim added and restores the ones it removed.
func (r *RepoClient) Release(ctx context.Context, c Claim) error {
	issue, err := r.GetIssue(ctx, c.Issue)
	if err != nil {
		return err
	}
	if issue.AssignedTo(c.Login) {
		var rest []string
		for _, a := range issue.Assignees {
			if a != c.Login {
				rest = append(rest, a)
			}
		}
		if err := r.SetAssignees(ctx, c.Issue, rest); err != nil {
			return err
		}
	}
	if err := r.RemoveLabels(ctx, c.Issue, c.Added...); err != nil {
		return err
	}
	return r.AddLabels(ctx, c.Issue, c.Removed...)
}

// DeleteComment deletes comment id.
func (r *RepoClient) DeleteComment(ctx context.Context, id int64) error {
	resp, err := r.c.api(ctx).DeleteIssueComment(r.owner, r.name, id)
	return r.c.check(fmt.Sprintf("delete comment %d in %s", id, r.slug), resp, err)
}

func newNonce() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("claim nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}
