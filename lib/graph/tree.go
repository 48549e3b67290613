package graph

import (
	"regexp"
	"strconv"
	"strings"
)

// Objective is one objective of the prerequisite tree.
type Objective struct {
	// Name is the heading's text without the issue suffix.
	Name string
	// Issue is the (#N) of the heading; 0 when there is none.
	Issue int64
	// Status is the first word of the Status line; "" when there is none.
	Status string
	// Prereqs are the checkbox lines under the objective.
	Prereqs []Prereq
}

// Prereq is one prerequisite line of the tree.
type Prereq struct {
	// Text is the line after the checkbox.
	Text string
	// Done is the checkbox's state.
	Done bool
	// Issues are the #N references anywhere in the text.
	Issues []int64
}

// ID returns the node id of the objective.
func (o Objective) ID() string { return "objective:" + Slug(o.Name) }

// ID returns the node id of the prerequisite.
func (p Prereq) ID() string { return "prereq:" + Slug(p.Text) }

var (
	// objectiveRE, prereqRE and statusRE are the parser contract of the
	// tree (spec 40 §2.4), shared with the planner.
	objectiveRE = regexp.MustCompile(`^##\s+Objective:\s+(.+?)(?:\s+\(#(\d+)\))?\s*$`)
	prereqRE    = regexp.MustCompile(`^-\s+\[([ xX])\]\s+(.+)`)
	statusRE    = regexp.MustCompile(`^Status:\s+(\S+)`)
	// issueRefRE finds #N; standalone is checked by the caller.
	issueRefRE = regexp.MustCompile(`#([0-9]{1,12})`)
)

// ParseTree reads a prerequisite tree (spec 40 §2.4): "## Objective:"
// headings, each with checkbox prerequisites and a Status line. Lines
// before the first objective and lines of no known shape are ignored.
func ParseTree(text string) []Objective {
	var out []Objective
	for line := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if m := objectiveRE.FindStringSubmatch(line); m != nil {
			o := Objective{Name: strings.TrimSpace(m[1])}
			if m[2] != "" {
				o.Issue, _ = strconv.ParseInt(m[2], 10, 64)
			}
			out = append(out, o)
			continue
		}
		if len(out) == 0 {
			continue
		}
		cur := &out[len(out)-1]
		if m := prereqRE.FindStringSubmatch(strings.TrimLeft(line, " \t")); m != nil {
			text := strings.TrimSpace(m[2])
			cur.Prereqs = append(cur.Prereqs, Prereq{Text: text, Done: m[1] != " ", Issues: issueRefs(text)})
			continue
		}
		if m := statusRE.FindStringSubmatch(line); m != nil && cur.Status == "" {
			cur.Status = strings.ToUpper(strings.TrimRight(m[1], ":,;—-"))
		}
	}
	return out
}

// issueRefs returns the standalone #N references of text, in order of
// appearance, without repeats.
func issueRefs(text string) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, m := range issueRefRE.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > 0 && isWordByte(text[m[0]-1]) {
			continue
		}
		if m[1] < len(text) && isWordByte(text[m[1]]) {
			continue
		}
		n, err := strconv.ParseInt(text[m[2]:m[3]], 10, 64)
		if err != nil || n <= 0 || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// isWordByte reports whether c glues to a #N reference ("repo#12", "#12a").
func isWordByte(c byte) bool {
	return c == '_' || c == '&' || c == '#' || c == '/' ||
		(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// Slug is the reference's slug: lower case, only a-z, 0-9, whitespace and
// '-' kept, runs of whitespace and '-' made one '-', trimmed of '-'.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		case r == '-' || r == ' ' || r == '\t' || r == '\n' || r == '\r':
			dash = true
		}
	}
	return b.String()
}
