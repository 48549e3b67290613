package gardener

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/text"
)

// applyForge is what applying a manifest does on the forge, as the
// gardener bot.
type applyForge interface {
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	EditIssue(ctx context.Context, n int64, e forge.IssueEdit) (forge.Issue, error)
	CloseIssue(ctx context.Context, n int64) error
	ClosePull(ctx context.Context, n int64) error
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
}

// Cut points of an application, in the order a run passes them: Hooks.Cut
// is called at each, and an error it returns stops the application there,
// as a killed process would.
const (
	CutBeforeAction = "before-action"
	CutAfterEffect  = "after-effect" // the forge changed, nothing recorded
	CutAfterRecord  = "after-record"
	CutBeforeReport = "before-report"
	CutAfterReport  = "after-report" // the PR comment is posted, the store not done
)

// Hooks let tests stop an application at a cut point.
type Hooks struct {
	Cut func(point, key string) error
}

func (h Hooks) cut(point, key string) error {
	if h.Cut == nil {
		return nil
	}
	return h.Cut(point, key)
}

// Outcome is what became of one action.
type Outcome string

// Outcomes of an action.
const (
	Applied  Outcome = "applied"
	Already  Outcome = "already" // found done (a repeated application)
	Conflict Outcome = "conflict"
	Skipped  Outcome = "skipped" // depends on a conflicting edit
	Failed   Outcome = "failed"
)

// record is the durable record of one manifest's application, kept under
// the state dir as applied/<merge sha>.json.
type record struct {
	Merge string `json:"merge"`
	PR    int64  `json:"pr"`
	// Actions holds the outcome per action key; Created the issue made by
	// each create_issue ID.
	Actions map[string]Outcome `json:"actions"`
	Created map[string]int64   `json:"created,omitempty"`
	Errors  map[string]string  `json:"errors,omitempty"`
	Done    bool               `json:"done"`
}

// applier applies merged manifests exactly once.
type applier struct {
	f     applyForge
	dir   string // applied records
	me    string
	hooks Hooks
	log   zerolog.Logger
}

func (ap *applier) path(merge string) string { return filepath.Join(ap.dir, merge+".json") }

func (ap *applier) load(merge string, pr int64) (*record, error) {
	rec := &record{Merge: merge, PR: pr, Actions: map[string]Outcome{}, Created: map[string]int64{}, Errors: map[string]string{}}
	err := atomicfile.ReadJSON(ap.path(merge), rec)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return rec, nil
}

func (ap *applier) save(rec *record) error {
	if err := os.MkdirAll(ap.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteJSON(ap.path(rec.Merge), rec, 0o600)
}

// done reports whether the manifest of merge is recorded as applied.
func (ap *applier) done(merge string) bool {
	rec, err := ap.load(merge, 0)
	return err == nil && rec.Done
}

// markDone records merge as applied without applying it (its report is
// on the pull request: a lost state dir).
func (ap *applier) markDone(merge string, pr int64) error {
	rec, err := ap.load(merge, pr)
	if err != nil {
		return err
	}
	rec.Done = true
	return ap.save(rec)
}

// Apply applies the manifest of pull request pr, merged as merge, once:
// each action's outcome is recorded as it is reached, an action found
// done is not done again, and the report comment with the applied marker
// closes it. A single failing action is logged and recorded; the rest go
// on.
func (ap *applier) Apply(ctx context.Context, pr int64, merge string, m Manifest) (*record, error) {
	rec, err := ap.load(merge, pr)
	if err != nil {
		return nil, err
	}
	if rec.Done {
		return rec, nil
	}
	conflicted := map[int64]bool{}
	for i, a := range m {
		key := Key(merge, i)
		if out, ok := rec.Actions[key]; ok {
			if out == Conflict || out == Skipped {
				conflicted[a.Issue] = true
			}
			continue
		}
		if err := ap.hooks.cut(CutBeforeAction, key); err != nil {
			return rec, err
		}
		var out Outcome
		var aerr error
		if a.Issue > 0 && conflicted[a.Issue] {
			out = Skipped
		} else {
			out, aerr = ap.one(ctx, rec, key, a)
		}
		if err := ap.hooks.cut(CutAfterEffect, key); err != nil {
			return rec, err
		}
		if ctx.Err() != nil {
			return rec, ctx.Err()
		}
		if out == Conflict || out == Skipped {
			conflicted[a.Issue] = true
		}
		log := ap.log.With().Str("key", key).Str("action", string(a.Action)).Int64("issue", a.Issue).Logger()
		switch out {
		case Failed:
			rec.Errors[key] = aerr.Error()
			log.Warn().Str("error", aerr.Error()).Msg("manifest action failed; going on with the next")
		case Conflict:
			log.Warn().Msg("the issue body changed after the gardener read it; its edit and the changes that depend on it are skipped, a later run decides again")
		default:
			log.Info().Str("outcome", string(out)).Msg("manifest action")
		}
		rec.Actions[key] = out
		if err := ap.save(rec); err != nil {
			return rec, err
		}
		if err := ap.hooks.cut(CutAfterRecord, key); err != nil {
			return rec, err
		}
	}
	if err := ap.hooks.cut(CutBeforeReport, merge); err != nil {
		return rec, err
	}
	if err := ap.report(ctx, pr, merge, m, rec); err != nil {
		return rec, err
	}
	if err := ap.hooks.cut(CutAfterReport, merge); err != nil {
		return rec, err
	}
	rec.Done = true
	return rec, ap.save(rec)
}

// reported reports whether pull request pr carries the applied marker of
// merge, written by the gardener bot.
func (ap *applier) reported(ctx context.Context, pr int64, merge string) (bool, error) {
	cs, err := ap.f.ListComments(ctx, pr)
	if err != nil {
		return false, err
	}
	return hasMarker(cs, ap.me, forge.RefGardenerManifest, merge), nil
}

func hasMarker(cs []forge.Comment, me string, kind forge.RefKind, value string) bool {
	for _, c := range cs {
		for _, v := range c.RefMarkersBy(kind, me) {
			if v == value {
				return true
			}
		}
	}
	return false
}

// report posts the application's summary with the applied marker on the
// pull request, unless an earlier, interrupted application did.
func (ap *applier) report(ctx context.Context, pr int64, merge string, m Manifest, rec *record) error {
	if ok, err := ap.reported(ctx, pr, merge); err != nil || ok {
		return err
	}
	counts := map[string]int{}
	var lines []string
	for i, a := range m {
		out := rec.Actions[Key(merge, i)]
		counts[string(a.Action)+" "+string(out)]++
		if out == Failed || out == Conflict {
			lines = append(lines, fmt.Sprintf("%s %s: %s %s", a.Action, a.target(), out, rec.Errors[Key(merge, i)]))
		}
	}
	body := forge.RefMarker(forge.RefGardenerManifest, merge) + "\n" +
		formulaagent.Summary(fmt.Sprintf("Manifest of %s applied", text.ShortSHA(merge)), counts, lines)
	_, err := ap.f.CreateComment(ctx, pr, body)
	return err
}

// resolve returns the issue number an action targets.
func (rec *record) resolve(a Action) (int64, error) {
	if a.Ref == "" {
		return a.Issue, nil
	}
	n, ok := rec.Created[a.Ref]
	if !ok || n == 0 {
		return 0, fmt.Errorf("ref %q: its create_issue made no issue", a.Ref)
	}
	return n, nil
}

// expand replaces #{id} references in body by the created issues.
func (rec *record) expand(body string) string {
	return refRe.ReplaceAllStringFunc(body, func(s string) string {
		id := refRe.FindStringSubmatch(s)[1]
		if n := rec.Created[id]; n > 0 {
			return "#" + strconv.FormatInt(n, 10)
		}
		return s
	})
}

// one performs one action, idempotently.
func (ap *applier) one(ctx context.Context, rec *record, key string, a Action) (Outcome, error) {
	fail := func(err error) (Outcome, error) { return Failed, err }
	if a.Action == CreateIssue {
		return ap.create(ctx, rec, key, a)
	}
	if a.Action == ClosePR {
		if err := ap.f.ClosePull(ctx, a.PR); err != nil {
			return fail(err)
		}
		return Applied, nil
	}
	n, err := rec.resolve(a)
	if err != nil {
		return fail(err)
	}
	switch a.Action {
	case AddLabel:
		err = ap.f.AddLabels(ctx, n, forge.LabelName(a.Label))
	case RemoveLabel:
		err = ap.f.RemoveLabels(ctx, n, forge.LabelName(a.Label))
	case Close:
		err = ap.f.CloseIssue(ctx, n)
	case Comment:
		cs, lerr := ap.f.ListComments(ctx, n)
		if lerr != nil {
			return fail(lerr)
		}
		if hasMarker(cs, ap.me, forge.RefGardenerAction, key) {
			return Already, nil
		}
		_, err = ap.f.CreateComment(ctx, n, rec.expand(a.Body)+"\n\n"+actionMarker(key))
	case EditBody:
		return ap.edit(ctx, n, key, a)
	}
	if err != nil {
		return fail(err)
	}
	return Applied, nil
}

// edit applies an edit_body when the issue's body is still the one the
// decision was based on. A body that is already what the edit writes was
// edited by an earlier application; so was one that carries the action's
// marker on an issue only writers can edit (the gardener's own). An
// author's body that merely quotes the marker proves nothing: its author
// may have copied it there to keep the edit from ever being made.
func (ap *applier) edit(ctx context.Context, n int64, key string, a Action) (Outcome, error) {
	cur, err := ap.f.GetIssue(ctx, n)
	if err != nil {
		return Failed, err
	}
	body := a.Body + "\n\n" + actionMarker(key)
	if cur.Body == body || (forge.WrittenBy(cur.Author, ap.me) && strings.Contains(cur.Body, actionMarker(key))) {
		return Already, nil
	}
	if BodyHash(cur.Body) != a.BaseSHA256 {
		return Conflict, nil
	}
	if _, err := ap.f.EditIssue(ctx, n, forge.IssueEdit{Body: &body}); err != nil {
		return Failed, err
	}
	return Applied, nil
}

// create makes the issue of a create_issue once: an issue by the gardener
// carrying the action's marker is the one an earlier application made.
func (ap *applier) create(ctx context.Context, rec *record, key string, a Action) (Outcome, error) {
	mark := actionMarker(key)
	all, err := ap.f.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		return Failed, err
	}
	for _, i := range all {
		if forge.WrittenBy(i.Author, ap.me) && strings.Contains(i.Body, mark) {
			if a.ID != "" {
				rec.Created[a.ID] = i.Number
			}
			return Already, nil
		}
	}
	labels := make([]forge.LabelName, 0, len(a.Labels))
	for _, l := range a.Labels {
		labels = append(labels, forge.LabelName(l))
	}
	i, err := ap.f.CreateIssue(ctx, forge.NewIssue{Title: a.Title, Body: rec.expand(a.Body) + "\n\n" + mark, Labels: labels})
	if err != nil {
		return Failed, err
	}
	if a.ID != "" {
		rec.Created[a.ID] = i.Number
	}
	return Applied, nil
}
