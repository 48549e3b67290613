package formula

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/phase"
)

// Followup is a prompt a running session is resumed with ([followups.<name>]
// in the file): the news the orchestrator brings back, such as a CI
// failure or a review. Its text names the values the agent gives with
// {{name}} placeholders, each declared in Vars, and may name the phase
// lines a session writes as {{phase_<name>}} (ProtocolWords).
type Followup struct {
	Name        string
	Description string
	Text        string
	// Vars are the names of the values the agent gives, as declared.
	Vars []string
}

// ErrUnknownFollowup: the formula defines no follow-up of that name.
var ErrUnknownFollowup = errors.New("unknown follow-up")

// rawFollowup mirrors one [followups.<name>] table.
type rawFollowup struct {
	Description string   `toml:"description"`
	Text        string   `toml:"text"`
	Vars        []string `toml:"vars"`
}

// ProtocolWords returns the protocol words every follow-up may name, by
// placeholder: the phase lines a session may write, from lib/phase.
func ProtocolWords() map[string]string {
	out := map[string]string{}
	for _, p := range phase.All() {
		if p != phase.Crashed { // the runtime's alone
			out["phase_"+string(p)] = p.Line()
		}
	}
	return out
}

// Followup returns the formula's follow-up name.
func (f *Formula) Followup(name string) (Followup, bool) {
	i := slices.IndexFunc(f.Followups, func(x Followup) bool { return x.Name == name })
	if i < 0 {
		return Followup{}, false
	}
	return f.Followups[i], true
}

// RenderFollowup renders the follow-up name with vals, which must give a
// value for every variable it declares (ErrMissingVar) and for no other
// (ErrUndeclaredVar). Values are inserted as they are, never expanded
// again: fence untrusted ones with Untrusted first.
func (f *Formula) RenderFollowup(name string, vals map[string]string) (string, error) {
	fu, ok := f.Followup(name)
	if !ok {
		return "", fmt.Errorf("formula %s: follow-up %q: %w", f.Name, name, ErrUnknownFollowup)
	}
	for _, v := range fu.Vars {
		if _, ok := vals[v]; !ok {
			return "", fmt.Errorf("formula %s: follow-up %s: {{%s}}: %w", f.Name, name, v, ErrMissingVar)
		}
	}
	for k := range vals {
		if !slices.Contains(fu.Vars, k) {
			return "", fmt.Errorf("formula %s: follow-up %s: value for %q: %w", f.Name, name, k, ErrUndeclaredVar)
		}
	}
	words := ProtocolWords()
	out := placeholderRe.ReplaceAllStringFunc(fu.Text, func(m string) string {
		key := placeholderRe.FindStringSubmatch(m)[1]
		if v, ok := vals[key]; ok {
			return v
		}
		return words[key]
	})
	return out, nil
}

// convertFollowups validates [followups]: each has a description and a
// text, declares its variables once, uses every one of them, and names no
// placeholder it did not declare besides the protocol words.
func (v *validator) convertFollowups(raw *rawFormula, f *Formula) {
	words := ProtocolWords()
	for name, rf := range raw.Followups {
		field := "followups." + name
		line := v.loc.Line(field)
		if !identRe.MatchString(name) {
			v.add(line, field, ErrInvalid, "follow-up name must be lowercase letters, digits, '_' or '-'")
		}
		if strings.TrimSpace(rf.Description) == "" {
			v.add(line, field+".description", ErrInvalid, "is required")
		}
		text := strings.TrimSpace(rf.Text)
		if text == "" {
			v.add(line, field+".text", ErrInvalid, "is required")
		}
		vline := v.loc.Line(field + ".vars")
		seen := map[string]bool{}
		for _, vn := range rf.Vars {
			switch {
			case !identRe.MatchString(vn):
				v.add(vline, field+".vars", ErrInvalid, "%q is not a variable name", vn)
			case seen[vn]:
				v.add(vline, field+".vars", ErrInvalid, "%q is declared twice", vn)
			case words[vn] != "":
				v.add(vline, field+".vars", ErrInvalid, "%q is a protocol word, not a variable", vn)
			}
			seen[vn] = true
		}
		used := map[string]bool{}
		for _, m := range placeholderRe.FindAllStringSubmatch(text, -1) {
			used[m[1]] = true
			if !seen[m[1]] && words[m[1]] == "" {
				v.add(v.loc.Line(field+".text"), field+".text", ErrUndeclaredVar, "{{%s}} is neither in vars nor a protocol word", m[1])
			}
		}
		for _, vn := range rf.Vars {
			if !used[vn] {
				v.add(vline, field+".vars", ErrInvalid, "%q is declared but the text never uses it", vn)
			}
		}
		f.Followups = append(f.Followups, Followup{Name: name, Description: strings.TrimSpace(rf.Description), Text: text, Vars: rf.Vars})
	}
	sort.Slice(f.Followups, func(i, j int) bool { return f.Followups[i].Name < f.Followups[j].Name })
}
