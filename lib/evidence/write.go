package evidence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// Committer commits to the ops repository's primary branch (*ops.Repo).
type Committer interface {
	Commit(ctx context.Context, message string, edit ops.Edit) (string, error)
}

var _ Committer = (*ops.Repo)(nil)

// Options are one project's sources of evidence.
type Options struct {
	// Forge reads the project's pull requests, statuses and reviews.
	Forge Forge
	// Reviewer is the review bot's login: the reviews counted are its.
	Reviewer string
	// AccessLog is the edge's access log; "" when the edge is off.
	AccessLog string
	// Routes are the edge's routes, in matching order.
	Routes []edge.Route
	Bounds Bounds
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Result says what one Write did.
type Result struct {
	// Commit is the ops commit, "" when no file changed.
	Commit string
	// Engagement says the access log was read; Skipped counts its lines
	// that were no access entry.
	Engagement bool
	Skipped    int
}

// Write collects the evidence of the days its sources cover and commits
// the files that changed to ops in one commit; nothing when none did.
// A file is created once its source has a day to tell (without an
// access log there is no engagement file); one written before rolls its
// window even when its source says nothing new.
func Write(ctx context.Context, repo Committer, o Options) (Result, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	today := now().UTC()
	b := o.Bounds.withDefaults()
	y, m, d := today.Date()
	since := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(b.Days - 1))

	var res Result
	fresh := map[string][]Day{}
	var err error
	if fresh[CIPath], err = CI(ctx, o.Forge, since); err != nil {
		return res, err
	}
	if fresh[ReviewsPath], err = Reviews(ctx, o.Forge, o.Reviewer, since); err != nil {
		return res, err
	}
	if o.AccessLog != "" {
		days, skipped, ok, err := EngagementFromFile(o.AccessLog, o.Routes, since)
		if err != nil {
			return res, err
		}
		res.Engagement, res.Skipped = ok, skipped
		if ok {
			fresh[EngagementPath] = days
		}
	}
	res.Commit, err = repo.Commit(ctx, "evidence: "+DateOf(today), func(f ops.Files) ([]git.FileChange, error) {
		var out []git.FileChange
		for _, file := range []File{CIFile, ReviewsFile, EngagementFile} {
			old, err := f.Read(file.Path)
			exists := err == nil
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("evidence: read %s: %w", file.Path, err)
			}
			days := fresh[file.Path]
			if !exists && len(days) == 0 {
				continue // a source that is off, or has nothing to say yet, creates no file
			}
			text := file.Update(string(old), days, today, b)
			if exists && text == string(old) {
				continue
			}
			out = append(out, git.FileChange{Path: file.Path, Content: []byte(text)})
		}
		return out, nil
	})
	if err != nil {
		return res, fmt.Errorf("evidence: %w", err)
	}
	return res, nil
}
