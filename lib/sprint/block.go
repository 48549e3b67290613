package sprint

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
)

const (
	filerBegin = forge.FilerBegin
	filerEnd   = forge.FilerEnd
)

// Limits of the sub-issue block.
const (
	// MaxSubIssues bounds the entries of one block.
	MaxSubIssues = 100
	// MaxID bounds an entry's id.
	MaxID = 48
	// MaxTitle bounds an entry's title, the forge's own limit.
	MaxTitle = 255
)

// Labels are the labels a sub-issue may carry: work labels only. State
// labels that agents set (in-progress, blocked, vision, action, vault…)
// would make another agent act on an issue nobody asked it to.
var Labels = []forge.LabelName{forge.LabelBacklog, forge.LabelPriority, forge.LabelTechDebt, forge.LabelUnderspecified}

// labelList renders Labels for errors.
func labelList() string {
	s := make([]string, len(Labels))
	for i, l := range Labels {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}

// The keys of an entry.
const (
	keyID        = "id"
	keyTitle     = "title"
	keyLabels    = "labels"
	keyDependsOn = "depends_on"
	keyBody      = "body"
)

var (
	// idRe is the form of an entry id.
	idRe = regexp.MustCompile(`^[a-z0-9-]+$`)
	// yamlLineRe finds the line number in a YAML parser error.
	yamlLineRe = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)
	// plainTitleRe matches an entry's title line whose value is plain text,
	// not a YAML quoted, block, flow, anchor, alias or tagged value.
	plainTitleRe = regexp.MustCompile(`^(- |  )title:[ \t]+([^ \t"'|>\[\]{}&*!#%@` + "`" + `].*?)[ \t]*$`)
	// fenceRe matches a code fence line a writer may wrap the YAML in.
	fenceRe = regexp.MustCompile("^[ \t]*(```|~~~)[a-zA-Z]*[ \t]*$")
)

// parseBlock parses and validates the lines of the sub-issue block; offset
// is the file line of the begin marker, so block line k is file line
// offset+k.
func parseBlock(block []string, offset int) ([]SubIssue, *Error) {
	block = quoteTitles(unfence(block))
	text := strings.Join(block, "\n")
	at := func(line int, format string, args ...any) *Error {
		if line > 0 {
			line += offset
		} else {
			line = offset
		}
		return &Error{Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(text) == "" {
		return nil, at(0, "the sub-issue block is empty")
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlError(err, offset)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, at(extra.Line, "the sub-issue block holds more than one YAML document")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.SequenceNode {
		return nil, at(root.Line, "the sub-issue block must be a YAML list of entries (- id: …)")
	}
	if len(root.Content) == 0 {
		return nil, at(root.Line, "the sub-issue block has no entries")
	}
	if len(root.Content) > MaxSubIssues {
		return nil, at(root.Line, "the sub-issue block has %d entries, more than %d", len(root.Content), MaxSubIssues)
	}
	subs := make([]SubIssue, 0, len(root.Content))
	lines := make(map[string]int, len(root.Content)) // id → block line
	for i, n := range root.Content {
		s, line, msg := entry(n)
		if msg == "" {
			if first, dup := lines[s.ID]; dup {
				msg = fmt.Sprintf("id %q is also used at line %d", s.ID, first+offset)
			}
		}
		if msg != "" {
			return nil, at(line, "sub-issue %d%s: %s", i+1, idSuffix(s.ID), msg)
		}
		lines[s.ID] = n.Line
		subs = append(subs, s)
	}
	if err := checkDeps(subs, lines); err != nil {
		err.Line += offset
		return nil, err
	}
	return subs, nil
}

// idSuffix renders an entry's id for errors, when it has one.
func idSuffix(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", id)
}

// unfence blanks a code fence around the whole block (a writer's habit),
// keeping the line count so that line numbers stay right.
func unfence(block []string) []string {
	first, last := -1, -1
	for i, l := range block {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || first == last || !fenceRe.MatchString(block[first]) || !fenceRe.MatchString(block[last]) {
		return block
	}
	out := slices.Clone(block)
	out[first], out[last] = "", ""
	return out
}

// quoteTitles quotes the plain title of every entry, so that a title is
// the rest of its line as in the reference grammar (spec 50 §6.2 rule 2):
// "title: vision(#5): add the schema" is a title with a colon, not a YAML
// error, and "title: Fix #5" keeps its "#5" instead of losing it to a YAML
// comment. Only title lines at an entry's own indentation ("- title:" or
// "  title:") are touched, never a line of a body.
func quoteTitles(block []string) []string {
	out := slices.Clone(block)
	for i, l := range out {
		if m := plainTitleRe.FindStringSubmatch(l); m != nil {
			out[i] = m[1] + "title: " + strconv.Quote(m[2])
		}
	}
	return out
}

// yamlError turns a YAML syntax error into an *Error at its file line.
func yamlError(err error, offset int) *Error {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &Error{Line: n + offset, Msg: "sub-issue block: " + m[2]}
	}
	return &Error{Line: offset, Msg: "sub-issue block: " + strings.TrimPrefix(msg, "yaml: ")}
}

// entry validates one entry of the block. On failure it returns the block
// line of the problem and a message; s.ID is set when known.
func entry(n *yaml.Node) (s SubIssue, line int, msg string) {
	if n.Kind != yaml.MappingNode {
		return s, n.Line, "want a mapping with id, title, labels, depends_on, body"
	}
	seen := map[string]int{}
	var idLine, titleLine int
	for k := 0; k+1 < len(n.Content); k += 2 {
		key, val := n.Content[k], n.Content[k+1]
		if key.Kind != yaml.ScalarNode {
			return s, key.Line, "a key must be a plain word"
		}
		if first, dup := seen[key.Value]; dup {
			return s, key.Line, fmt.Sprintf("key %q is also set at line %d", key.Value, first)
		}
		seen[key.Value] = key.Line
		var err string
		switch key.Value {
		case keyID:
			s.ID, err = scalar(val, keyID)
			idLine = val.Line
		case keyTitle:
			s.Title, err = scalar(val, keyTitle)
			titleLine = val.Line
			if err == "" && (key.LineComment != "" || val.LineComment != "") {
				err = `title is cut short by a " #" comment; quote the title`
			}
		case keyLabels:
			s.Labels, err = list(val, keyLabels)
		case keyDependsOn:
			s.DependsOn, err = list(val, keyDependsOn)
		case keyBody:
			s.Body, err = scalar(val, keyBody)
			s.Body = strings.TrimRight(s.Body, "\n")
		default:
			err = fmt.Sprintf("unknown key %q (want id, title, labels, depends_on, body)", key.Value)
		}
		if err != "" {
			return s, key.Line, err
		}
	}
	if line, msg := s.validate(seen, n.Line, idLine, titleLine); msg != "" {
		return s, line, msg
	}
	return s, n.Line, ""
}

// validate checks the fields of an entry after decoding; seen maps the
// keys present to their lines.
func (s *SubIssue) validate(seen map[string]int, line, idLine, titleLine int) (int, string) {
	if _, ok := seen[keyID]; !ok {
		return line, "no id"
	}
	if len(s.ID) > MaxID || !idRe.MatchString(s.ID) {
		id := s.ID
		s.ID = ""
		return idLine, fmt.Sprintf("id %q: want [a-z0-9-]+, at most %d characters", id, MaxID)
	}
	if _, ok := seen[keyTitle]; !ok {
		return line, "no title"
	}
	s.Title = strings.TrimSpace(s.Title)
	switch {
	case s.Title == "":
		return titleLine, "empty title"
	case strings.ContainsAny(s.Title, "\r\n"):
		return titleLine, "the title spans more than one line"
	case len(s.Title) > MaxTitle:
		return titleLine, fmt.Sprintf("the title is %d bytes, more than %d", len(s.Title), MaxTitle)
	}
	for _, l := range s.Labels {
		if err := forge.LabelName(l).Validate(); err != nil {
			return seen[keyLabels], err.Error()
		}
		if !slices.Contains(Labels, forge.LabelName(l)) {
			return seen[keyLabels], fmt.Sprintf("label %q: a sub-issue may carry only %s", l, labelList())
		}
	}
	s.Labels = uniq(s.Labels)
	for _, d := range s.DependsOn {
		if d == s.ID {
			return seen[keyDependsOn], fmt.Sprintf("depends on itself (%q)", d)
		}
	}
	s.DependsOn = uniq(s.DependsOn)
	return 0, ""
}

// uniq drops repeated items, keeping the first of each.
func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// scalar returns the string value of a scalar node; null is "".
func scalar(n *yaml.Node, key string) (string, string) {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "", ""
	case n.Kind == yaml.ScalarNode:
		return n.Value, ""
	case n.Kind == yaml.AliasNode:
		return "", key + ": aliases are not allowed"
	}
	return "", key + ": want a single value, not a list or mapping"
}

// list returns the items of a sequence of scalars; null is empty.
func list(n *yaml.Node, key string) ([]string, string) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, ""
	}
	if n.Kind != yaml.SequenceNode {
		return nil, key + ": want a list such as [a, b]"
	}
	out := make([]string, 0, len(n.Content))
	for _, it := range n.Content {
		if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
			return nil, key + ": every item must be a single value"
		}
		v := strings.TrimSpace(it.Value)
		if v == "" {
			return nil, key + ": empty item"
		}
		out = append(out, v)
	}
	return out, ""
}

// checkDeps checks that every depends_on names an entry of the block and
// that the entries do not depend on each other in a cycle. lines maps ids
// to block lines.
func checkDeps(subs []SubIssue, lines map[string]int) *Error {
	index := make(map[string]int64, len(subs))
	for i, s := range subs {
		index[s.ID] = int64(i + 1)
	}
	edges := make(map[int64][]int64, len(subs))
	for i, s := range subs {
		n := int64(i + 1)
		edges[n] = []int64{}
		for _, d := range s.DependsOn {
			m, ok := index[d]
			if !ok {
				return &Error{Line: lines[s.ID], Msg: fmt.Sprintf("sub-issue %d (id %q): depends_on %q is no entry of this block", i+1, s.ID, d)}
			}
			edges[n] = append(edges[n], m)
		}
	}
	c := deps.NewGraph(edges).Cycle()
	if c == nil {
		return nil
	}
	ids := make([]string, len(c))
	for i, n := range c {
		ids[i] = subs[n-1].ID
	}
	first := subs[c[0]-1].ID
	return &Error{Line: lines[first], Msg: "depends_on cycle: " + strings.Join(ids, " -> ")}
}

// Order returns the sub-issues so that each comes after those it depends
// on; among entries free to go next, the one written first comes first.
// Parse has ruled out cycles, so every entry is returned.
func (s Spec) Order() []SubIssue {
	index := make(map[string]int64, len(s.SubIssues))
	for i, sub := range s.SubIssues {
		index[sub.ID] = int64(i + 1)
	}
	edges := make(map[int64][]int64, len(s.SubIssues))
	for i, sub := range s.SubIssues {
		n := int64(i + 1)
		edges[n] = []int64{}
		for _, d := range sub.DependsOn {
			if m, ok := index[d]; ok {
				edges[n] = append(edges[n], m)
			}
		}
	}
	order, err := deps.NewGraph(edges).Order()
	if err != nil {
		// Only a Spec that did not come from Parse can have a cycle; keep
		// file order rather than lose entries.
		return slices.Clone(s.SubIssues)
	}
	out := make([]SubIssue, 0, len(order))
	for _, n := range order {
		out = append(out, s.SubIssues[n-1])
	}
	return out
}
