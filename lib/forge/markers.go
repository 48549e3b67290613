package forge

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Marker is a hidden comment marker of ours:
// <!-- disinto:KIND key=value ... -->. Values are percent-escaped so that
// untrusted text can neither end the comment nor forge another field.
//
// A marker proves nothing about who wrote it: anyone can paste one into
// an issue, a comment or a pull request. A marker counts only when the
// bot that writes it wrote the text it is in; MarkerBy and
// DecomposedFromBy read markers that way, and WrittenBy is the test for
// readers of other protocols.
type Marker struct {
	Kind   string
	Fields map[string]string
}

var (
	markerKindRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	markerKeyRe  = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	markerRe     = regexp.MustCompile(`<!-- disinto:([a-z][a-z0-9-]*)((?: [a-z][a-z0-9_-]*=[^ <>]*)*) -->`)
)

// String renders m. It fails if the kind or a key is malformed.
func (m Marker) String() (string, error) {
	if !markerKindRe.MatchString(m.Kind) {
		return "", fmt.Errorf("marker kind %q: want [a-z][a-z0-9-]*", m.Kind)
	}
	keys := make([]string, 0, len(m.Fields))
	for k := range m.Fields {
		if !markerKeyRe.MatchString(k) {
			return "", fmt.Errorf("marker %s key %q: want [a-z][a-z0-9_-]*", m.Kind, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("<!-- disinto:")
	b.WriteString(m.Kind)
	for _, k := range keys {
		b.WriteString(" ")
		b.WriteString(k)
		b.WriteString("=")
		b.WriteString(escapeMarkerValue(m.Fields[k]))
	}
	b.WriteString(" -->")
	return b.String(), nil
}

// ParseMarkers returns every marker of ours in body, in order.
func ParseMarkers(body string) []Marker {
	var out []Marker
	for _, m := range markerRe.FindAllStringSubmatch(body, -1) {
		mk := Marker{Kind: m[1], Fields: map[string]string{}}
		for _, kv := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(kv, "=")
			if val, ok := unescapeMarkerValue(v); ok {
				mk.Fields[k] = val
			}
		}
		out = append(out, mk)
	}
	return out
}

// WrittenBy reports whether author, the forge's record of who wrote an
// issue, comment or pull request, is bot, the one identity whose markers
// of a kind count. An empty bot is nobody: a role that does not know its
// own identity trusts no marker.
func WrittenBy(author, bot string) bool {
	return bot != "" && strings.EqualFold(author, bot)
}

// MarkerBy returns the last marker of kind in the issue's body when bot
// opened the issue; a marker in anyone else's issue is ignored.
func (i Issue) MarkerBy(kind, bot string) (Marker, bool) {
	if !WrittenBy(i.Author, bot) {
		return Marker{}, false
	}
	return FindMarker(i.Body, kind)
}

// MarkerBy returns the last marker of kind in the comment when bot wrote
// it; a marker in anyone else's comment is ignored.
func (c Comment) MarkerBy(kind, bot string) (Marker, bool) {
	if !WrittenBy(c.Author, bot) {
		return Marker{}, false
	}
	return FindMarker(c.Body, kind)
}

// MarkerBy returns the last marker of kind in the pull request's body
// when bot opened it from the base repository; a marker in anyone else's
// pull request is ignored.
func (p PullRequest) MarkerBy(kind, bot string) (Marker, bool) {
	if !WrittenBy(p.Author, bot) || p.FromFork {
		return Marker{}, false
	}
	return FindMarker(p.Body, kind)
}

// FindMarker returns the last marker of kind in body, whoever wrote it;
// see MarkerBy.
func FindMarker(body, kind string) (Marker, bool) {
	ms := ParseMarkers(body)
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Kind == kind {
			return ms[i], true
		}
	}
	return Marker{}, false
}

// safeMarkerByte lists bytes left unescaped in marker values.
func safeMarkerByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("._/:#@+,-", c) >= 0
}

func escapeMarkerValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safeMarkerByte(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unescapeMarkerValue(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		var v byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &v); err != nil {
			return "", false
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), true
}

// MarkerClaim is the kind of the short-lived comment that orders the
// contenders of a claim: <!-- disinto:claim by=<login> nonce=<hex> -->.
const MarkerClaim = "claim"

// MarkerDashboard is the kind of the marker in the body of the factory's
// dashboard issue of a project, which the dev bot keeps up to date:
// <!-- disinto:dashboard project=<name> -->.
const MarkerDashboard = "dashboard"

// MarkerDepWait is the kind of the one status comment the dev agent keeps
// on an issue that waits for its dependencies, edited in place as they
// change: <!-- disinto:dep-wait issue=<n> -->.
const MarkerDepWait = "dep-wait"

// MarkerIncident is the kind of the marker in the body of the supervisor's
// incident issue, naming the condition by a stable fingerprint so that a
// condition that persists updates its one open issue instead of filing
// another: <!-- disinto:incident fingerprint=<kebab-id> -->.
const MarkerIncident = "incident"

// MarkerSprint is the kind of the marker at the end of a sprint pull
// request's body on the ops repository, naming the vision issue the sprint
// decomposes and the slug of its file; the architect reads the vision
// number from nowhere else: <!-- disinto:sprint vision=<n> slug=<slug> -->.
const MarkerSprint = "sprint"

// MarkerSprintDecision is the kind of the marker in the architect's
// acknowledgement of a human decision on a sprint pull request, naming
// the comment or review decided by, so that a decision is acted on once
// even when the architect's local state is lost:
// <!-- disinto:sprint-decision id=<comment-N|review-N> verdict=<accept|reject> -->.
const MarkerSprintDecision = "sprint-decision"

// MarkerSprintReply is the kind of the marker in the architect's design
// comments on a sprint pull request, naming the newest human comment
// answered and whether the sprint is ready to merge:
// <!-- disinto:sprint-reply through=<comment id> ready=<true|false> -->.
const MarkerSprintReply = "sprint-reply"

// MarkerSprintRejected is the kind of the marker in the architect's
// comment on a vision issue whose sprint a human rejected: the vision is
// not pitched again while its body hashes to hash, or until a human
// deletes the comment: <!-- disinto:sprint-rejected pr=<n> hash=<hex> -->.
const MarkerSprintRejected = "sprint-rejected"

// MarkerVisionUnderspecified is the kind of the marker in the architect's
// comment on a vision issue it cannot pitch because the body is empty:
// <!-- disinto:vision-underspecified issue=<n> -->.
const MarkerVisionUnderspecified = "vision-underspecified"

// MarkerVisionTemplate is the kind of the marker in the VISION.md that
// disinto init seeds: while it is there the file is the template, not a
// vision, and the planner plans nothing from it:
// <!-- disinto:vision-template -->.
const MarkerVisionTemplate = "vision-template"

// MarkerOrigin is the kind of the marker that records whose word a work
// item's text is, written by the bot of the role that derived the item
// from others (a tech-debt finding from a pull request, a fix issue from a
// bug report, a gardener enrichment or bundle): trust is maintainer or
// outsider, the least trusted of what the item was made from, and from
// names those sources: <!-- disinto:origin trust=<maintainer|outsider> from=<pr-N,issue-N,…> -->.
// lib/provenance writes and reads it.
const MarkerOrigin = "origin"

// MarkerOriginWait is the kind of the marker in the dev agent's one
// comment on a backlog issue it does not take because an outsider wrote
// its text and no maintainer applied backlog since:
// <!-- disinto:origin-wait issue=<n> -->.
const MarkerOriginWait = "origin-wait"

// MarkerAutonomy is the kind of the marker in the body of a pull request
// a role opens, naming the autonomy level it is worked at, which the
// track record of each level counts by:
// <!-- disinto:autonomy level=<auto|approve|advisory> -->.
const MarkerAutonomy = "autonomy"

// MarkerRetried is the kind of the marker in the dev bot's comment on a
// blocked issue a maintainer gave back to the backlog by ticking its box
// on the dashboard: the dev bot applies backlog then, on the word of the
// maintainer who ticked it (only writers can edit the dashboard), and the
// provenance gate counts that application as theirs:
// <!-- disinto:retried issue=<n> -->.
const MarkerRetried = "retried"

// Neutralise makes every HTML comment opener in s visible text ("&lt;!--",
// which a forge renders as "<!--"), so that untrusted text quoted into a
// comment the bots post (issue text, model output, CI logs, errors) can
// never carry a hidden marker of ours or of the reference protocol into it.
func Neutralise(s string) string {
	return strings.ReplaceAll(s, "<!--", "&lt;!--")
}

// RefKind is a marker kind of the reference protocol, written as
// <!-- KIND: value -->.
type RefKind string

// Reference markers (spec 00 §6 and the agent specs).
const (
	RefReviewed           RefKind = "reviewed"
	RefReviewError        RefKind = "review-error"
	RefVerdict            RefKind = "verdict"
	RefDevResponse        RefKind = "dev-response"
	RefGardenerManifest   RefKind = "gardener-manifest-applied"
	RefGardenerAction     RefKind = "gardener-action"
	RefSummarizedThrough  RefKind = "summarized-through-run"
	RefDisintoIssue       RefKind = "disinto-issue"
	RefDepCycle           RefKind = "dep-cycle"
	RefDecomposedFrom     RefKind = "decomposed-from"
	RefArchitect          RefKind = "architect"
	refValueForbiddenRune         = "<>\n\r"
)

// RefMarker renders <!-- kind: value -->. Characters that could end the
// comment or open another one (<, >) are dropped from value and newlines
// become spaces.
func RefMarker(kind RefKind, value string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r':
			return ' '
		case strings.ContainsRune(refValueForbiddenRune, r):
			return -1
		}
		return r
	}, value)
	clean = strings.Join(strings.Fields(clean), " ")
	return fmt.Sprintf("<!-- %s: %s -->", kind, clean)
}

// FindRefMarkers returns the values of every <!-- kind: value --> in body,
// in order.
func FindRefMarkers(body string, kind RefKind) []string {
	re := regexp.MustCompile(`<!-- ` + regexp.QuoteMeta(string(kind)) + `: ([^<>\n]*?) -->`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// Sprint protocol strings (spec 50 §5, §6). The architect writes the filer
// block into a sprint file; the filer reads it and marks what it filed.
const (
	// SprintTitlePrefix starts the title of every sprint pull request on
	// the ops repository: "architect: <vision title>".
	SprintTitlePrefix = "architect:"
	// FilerBegin opens the sub-issue block of a sprint file.
	FilerBegin = "<!-- filer:begin -->"
	// FilerEnd closes the sub-issue block of a sprint file.
	FilerEnd = "<!-- filer:end -->"
	// VisionCompletedHeading starts the filer's comment on a vision issue
	// whose sub-issues are all closed.
	VisionCompletedHeading = "## Vision Issue Completed"
)

// MarkerSprintFiled is the kind of the marker in the filer's comment on a
// merged sprint PR, recording which issues it filed for which sprint so
// that humans and the architect can see the mapping:
// <!-- disinto:sprint-filed pr=<n> sprints=<slug>,… issues=12,13 -->.
const MarkerSprintFiled = "sprint-filed"

// MarkerSprintRefused is the kind of the marker in the filer's comment on
// a merged sprint PR whose sprint files it will not file, said once:
// <!-- disinto:sprint-refused pr=<n> -->.
const MarkerSprintRefused = "sprint-refused"

// MarkerVisionComplete is the kind of the marker in the filer's completion
// comment on a vision issue, so that the comment is posted once:
// <!-- disinto:vision-complete vision=<n> -->.
const MarkerVisionComplete = "vision-complete"

// DecomposedFrom identifies one sub-issue of a sprint: the vision issue the
// sprint decomposes, the sprint's slug and the sub-issue's id in its block.
type DecomposedFrom struct {
	Vision int64
	Sprint string
	ID     string
}

// decomposedFromRe matches the filer's marker strictly, so that vision #1
// never collects the sub-issues of #12 (W-FI-5).
var decomposedFromRe = regexp.MustCompile(`<!-- decomposed-from: #([1-9][0-9]{0,17}), sprint: ([a-z0-9-]+), id: ([a-z0-9-]+) -->`)

// String renders the marker the filer appends to a sub-issue's body:
// <!-- decomposed-from: #<vision>, sprint: <slug>, id: <id> -->.
func (d DecomposedFrom) String() string {
	return RefMarker(RefDecomposedFrom, fmt.Sprintf("#%d, sprint: %s, id: %s", d.Vision, d.Sprint, d.ID))
}

// DecomposedFromBy returns the decomposed-from markers of the issue when
// filer, the bot that files sub-issues, opened it; nil for anyone else's
// issue, whose markers would make a vision look decomposed.
func (i Issue) DecomposedFromBy(filer string) []DecomposedFrom {
	if !WrittenBy(i.Author, filer) {
		return nil
	}
	return FindDecomposedFrom(i.Body)
}

// FindDecomposedFrom returns every well-formed decomposed-from marker in
// body, in order. Like every marker it proves nothing about its author;
// see DecomposedFromBy.
func FindDecomposedFrom(body string) []DecomposedFrom {
	var out []DecomposedFrom
	for _, m := range decomposedFromRe.FindAllStringSubmatch(body, -1) {
		var n int64
		if _, err := fmt.Sscan(m[1], &n); err != nil || n <= 0 {
			continue
		}
		out = append(out, DecomposedFrom{Vision: n, Sprint: m[2], ID: m[3]})
	}
	return out
}

// RefMarkersBy returns the values of the reference markers of kind in
// the comment when bot wrote it; a comment of anyone else's carries none.
func (c Comment) RefMarkersBy(kind RefKind, bot string) []string {
	if !WrittenBy(c.Author, bot) {
		return nil
	}
	return FindRefMarkers(c.Body, kind)
}

// RefMarkersBy returns the values of the reference markers of kind in
// the pull request's body when bot opened it from the base repository.
func (p PullRequest) RefMarkersBy(kind RefKind, bot string) []string {
	if !WrittenBy(p.Author, bot) || p.FromFork {
		return nil
	}
	return FindRefMarkers(p.Body, kind)
}
