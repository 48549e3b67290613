package architect

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// The names of sprint pull requests on the ops repository (spec 50 §5).
// They find candidates; ownership is the author and the head repository,
// and the vision is read from the body's hidden marker only.
const (
	titlePrefix  = forge.SprintTitlePrefix + " "
	branchPrefix = "architect/sprint-vision-"
)

var branchRe = regexp.MustCompile(`^architect/sprint-vision-([1-9][0-9]*)(?:-([2-9]|[1-9][0-9]+))?$`)

// sprintID is what the sprint marker of a pull request's body says: the
// vision, the slug of the sprint file and the sprint's branch. The branch
// is kept here because the forge reports the head of a pull request whose
// branch was deleted as refs/pull/<n>/head, and that of a closed one as
// the name again once a new branch of that name exists.
type sprintID struct {
	Vision int64
	Slug   string
	Branch string
}

// sprintPR is one of the architect's sprint pull requests.
type sprintPR struct {
	forge.PullRequest
	sprintID
}

// ourSprints keeps the pull requests that are the architect's sprints:
// opened by me from a branch of the ops repository itself, carrying the
// sprint marker with a vision number.
func ourSprints(pulls []forge.PullRequest, me string) []sprintPR {
	var out []sprintPR
	for _, p := range pulls {
		if !strings.HasPrefix(p.Title, forge.SprintTitlePrefix) && !strings.HasPrefix(p.Head, branchPrefix) {
			continue
		}
		m, ok := p.MarkerBy(forge.MarkerSprint, me)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(m.Fields["vision"], 10, 64)
		if err != nil || n <= 0 || m.Fields["slug"] == "" || !branchRe.MatchString(m.Fields["branch"]) {
			continue
		}
		out = append(out, sprintPR{PullRequest: p, sprintID: sprintID{Vision: n, Slug: m.Fields["slug"], Branch: m.Fields["branch"]}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// branchFor is the head branch of the attempt-th sprint of vision n:
// architect/sprint-vision-<n>, then -2, -3, … for re-pitches.
func branchFor(n int64, attempt int) string {
	if attempt <= 1 {
		return fmt.Sprintf("%s%d", branchPrefix, n)
	}
	return fmt.Sprintf("%s%d-%d", branchPrefix, n, attempt)
}

// freeBranch is the first sprint branch of vision n that no pull request
// of the ops repository (any state, anyone's) has used as its head, nor
// any sprint of the architect's as its branch: a closed sprint's leftover
// name never blocks a new pitch (W-AR-5), and every sprint has a branch,
// a workspace and a conversation of its own.
func freeBranch(n int64, pulls []forge.PullRequest, me string) string {
	used := map[string]bool{}
	for _, p := range pulls {
		if branchRe.MatchString(p.Head) {
			used[p.Head] = true
		}
	}
	for _, s := range ourSprints(pulls, me) {
		used[s.Branch] = true
	}
	for attempt := 1; ; attempt++ {
		if b := branchFor(n, attempt); !used[b] {
			return b
		}
	}
}

// sprintMarker is the hidden marker of a sprint pull request's body.
func sprintMarker(id sprintID) string {
	return marker(forge.MarkerSprint, map[string]string{"vision": strconv.FormatInt(id.Vision, 10), "slug": id.Slug, "branch": id.Branch})
}

// mirror is the pull request body that mirrors a sprint file: the file,
// then the marker.
func mirror(text []byte, id sprintID) string {
	return strings.TrimRight(string(text), "\n") + "\n\n" + sprintMarker(id)
}

// bodyHash sums a vision issue's body, to tell whether it changed since a
// rejection.
func bodyHash(body string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(body)))
	return hex.EncodeToString(h[:8])
}

// marker renders a marker of kind with fields; the kinds and keys are
// ours and valid.
func marker(kind string, fields map[string]string) string {
	s, _ := forge.Marker{Kind: kind, Fields: fields}.String()
	return s
}
