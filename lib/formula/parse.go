package formula

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/tomlpos"
)

// rawFormula mirrors the file. Every key the schema knows is here; anything
// else is reported as ErrUnknownKey.
type rawFormula struct {
	Name           string                 `toml:"name"`
	Description    string                 `toml:"description"`
	Version        int                    `toml:"version"`
	Model          string                 `toml:"model"`
	Context        rawContext             `toml:"context"`
	Vars           map[string]rawVar      `toml:"vars"`
	Steps          []rawStep              `toml:"steps"`
	StackScript    string                 `toml:"stack_script"`
	Tools          []string               `toml:"tools"`
	TimeoutMinutes int                    `toml:"timeout_minutes"`
	Followups      map[string]rawFollowup `toml:"followups"`
}

type rawContext struct {
	Files []string `toml:"files"`
}

type rawVar struct {
	Description string  `toml:"description"`
	Required    bool    `toml:"required"`
	Default     *string `toml:"default"`
}

type rawStep struct {
	ID          string   `toml:"id"`
	Title       string   `toml:"title"`
	Description string   `toml:"description"`
	Needs       []string `toml:"needs"`
}

var (
	identRe = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)
	// placeholderRe matches {{name}} but not Go template actions such as
	// {{.State}} that appear in shell snippets.
	placeholderRe = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}`)
)

// Parse decodes and validates one formula. file names it in errors and its
// base name (without ".toml") must equal the formula's name, except for a
// .profile override (formula.toml), which may carry any formula's name.
func Parse(file string, data []byte) (*Formula, error) {
	want := strings.TrimSuffix(path.Base(filepath.ToSlash(file)), ".toml")
	if path.Base(filepath.ToSlash(file)) == ProfileFormulaFile {
		want = ""
	}
	return parse(file, data, want)
}

// Load reads name.toml from fsys and parses it.
func Load(fsys fs.FS, name string) (*Formula, error) {
	file := name + ".toml"
	data, err := fs.ReadFile(fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load %s: %w", file, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", file, err)
	}
	return Parse(file, data)
}

// LoadAll parses every *.toml at the top of fsys, sorted by name. It
// returns the formulas that are valid and every problem of the others.
func LoadAll(fsys fs.FS) ([]*Formula, error) {
	names, err := fs.Glob(fsys, "*.toml")
	if err != nil {
		return nil, fmt.Errorf("list formulas: %w", err)
	}
	sort.Strings(names)
	var out []*Formula
	var errs ErrorList
	for _, n := range names {
		f, err := Load(fsys, strings.TrimSuffix(n, ".toml"))
		if err != nil {
			if p := Problems(err); p != nil {
				errs = append(errs, p...)
				continue
			}
			return nil, err
		}
		out = append(out, f)
	}
	return out, errs.Err()
}

// parse does the work of Parse; wantName "" skips the name check.
func parse(file string, data []byte, wantName string) (*Formula, error) {
	var raw rawFormula
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		return nil, ErrorList{syntaxError(file, err)}
	}
	v := &validator{file: file, loc: tomlpos.New(string(data))}
	v.unknownKeys(md.Undecoded())
	f := v.convert(&raw, wantName)
	if err := v.errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// syntaxError locates a decode error (bad syntax or a type mismatch).
func syntaxError(file string, err error) *Error {
	line, key, msg := tomlpos.DecodeError(err)
	if key != "" {
		msg = fmt.Sprintf("%s (after key %q)", msg, key)
	}
	return &Error{File: file, Line: line, Msg: msg, Err: ErrSyntax}
}

type validator struct {
	file string
	loc  *tomlpos.Locator
	errs ErrorList
}

func (v *validator) add(line int, field string, sentinel error, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Line: line, Key: field, Msg: fmt.Sprintf(format, args...), Err: sentinel})
}

// unknownKeys reports undecoded keys at the line of each occurrence; a key
// inside an unknown table is covered by the table.
func (v *validator) unknownKeys(keys []toml.Key) {
	unknown := map[string]bool{}
	for _, k := range keys {
		unknown[k.String()] = true
	}
	covered := func(p string) bool {
		for i := strings.LastIndex(p, "."); i > 0; i = strings.LastIndex(p[:i], ".") {
			if unknown[p[:i]] {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, at := range v.loc.Keys() {
		p := tomlpos.Unnumbered(at.Path)
		if !unknown[p] || covered(p) {
			continue
		}
		seen[p] = true
		v.add(at.Line, tomlpos.Indexed(at.Path), ErrUnknownKey, "unknown key %q", lastPart(p))
	}
	// Keys the scanner could not place are still reported, without a line.
	for _, k := range keys {
		p := k.String()
		if !seen[p] && !covered(p) {
			v.add(0, p, ErrUnknownKey, "unknown key %q", lastPart(p))
		}
	}
}

func lastPart(p string) string {
	return p[strings.LastIndex(p, ".")+1:]
}

func (v *validator) convert(raw *rawFormula, wantName string) *Formula {
	l := v.loc
	f := &Formula{
		Name:           raw.Name,
		Description:    strings.TrimSpace(raw.Description),
		Version:        raw.Version,
		Model:          raw.Model,
		StackScript:    raw.StackScript,
		Tools:          raw.Tools,
		TimeoutMinutes: raw.TimeoutMinutes,
		File:           v.file,
		varLines:       map[string]int{},
	}
	switch {
	case raw.Name == "":
		v.add(l.Line("name"), "name", ErrInvalid, "is required")
	case !identRe.MatchString(raw.Name):
		v.add(l.Line("name"), "name", ErrInvalid, "%q is not a lowercase kebab-case name", raw.Name)
	case wantName != "" && raw.Name != wantName:
		v.add(l.Line("name"), "name", ErrInvalid, "%q does not match the file name %q", raw.Name, wantName)
	}
	if f.Description == "" {
		v.add(l.Line("description"), "description", ErrInvalid, "is required")
	}
	if raw.Version < 1 {
		v.add(l.Line("version"), "version", ErrInvalid, "must be a positive integer")
	}
	if raw.TimeoutMinutes < 0 {
		v.add(l.Line("timeout_minutes"), "timeout_minutes", ErrInvalid, "must not be negative")
	}
	for _, c := range raw.Context.Files {
		cf := ContextFile{Path: c}
		if rest, ok := strings.CutPrefix(c, opsPrefix); ok {
			cf = ContextFile{Ops: true, Path: rest}
		}
		if cf.Path == "" || path.IsAbs(cf.Path) || !fs.ValidPath(cf.Path) {
			v.add(l.Line("context.files"), "context.files", ErrInvalid, "%q is not a relative path inside the repository", c)
			continue
		}
		f.ContextFiles = append(f.ContextFiles, cf)
	}
	v.convertVars(raw, f)
	v.convertSteps(raw, f)
	v.convertFollowups(raw, f)
	return f
}

func (v *validator) convertVars(raw *rawFormula, f *Formula) {
	for name, rv := range raw.Vars {
		line := v.loc.Line("vars." + name)
		f.varLines[name] = line
		if !identRe.MatchString(name) {
			v.add(line, "vars."+name, ErrInvalid, "variable name must be lowercase letters, digits, '_' or '-'")
		}
		if strings.TrimSpace(rv.Description) == "" {
			v.add(line, "vars."+name+".description", ErrInvalid, "is required")
		}
		vr := Var{Name: name, Description: strings.TrimSpace(rv.Description), Required: rv.Required}
		if rv.Default != nil {
			vr.Default, vr.HasDefault = *rv.Default, true
		}
		f.Vars = append(f.Vars, vr)
	}
	sort.Slice(f.Vars, func(i, j int) bool { return f.Vars[i].Name < f.Vars[j].Name })
}

func (v *validator) convertSteps(raw *rawFormula, f *Formula) {
	l := v.loc
	if len(raw.Steps) == 0 {
		v.add(0, "steps", ErrInvalid, "at least one [[steps]] entry is required")
		return
	}
	index := map[string]int{}
	for i, s := range raw.Steps {
		field := fmt.Sprintf("steps[%d]", i)
		switch {
		case s.ID == "":
			v.add(l.ElementLine("steps", i, ""), field+".id", ErrInvalid, "is required")
		case !identRe.MatchString(s.ID):
			v.add(l.ElementLine("steps", i, "id"), field+".id", ErrInvalid, "%q is not a lowercase kebab-case id", s.ID)
		}
		if _, dup := index[s.ID]; dup && s.ID != "" {
			v.add(l.ElementLine("steps", i, "id"), field+".id", ErrDuplicateStep, "%q is already the id of step %d", s.ID, index[s.ID])
		} else {
			index[s.ID] = i
		}
		if strings.TrimSpace(s.Title) == "" {
			v.add(l.ElementLine("steps", i, ""), field+".title", ErrInvalid, "is required")
		}
		if strings.TrimSpace(s.Description) == "" {
			v.add(l.ElementLine("steps", i, ""), field+".description", ErrInvalid, "is required")
		}
	}
	for i, s := range raw.Steps {
		for _, n := range s.Needs {
			if _, ok := index[n]; !ok {
				v.add(l.ElementLine("steps", i, "needs"), fmt.Sprintf("steps[%d].needs", i), ErrUnknownNeed, "step %q needs %q, which is not a step of this formula", s.ID, n)
			} else if n == s.ID {
				v.add(l.ElementLine("steps", i, "needs"), fmt.Sprintf("steps[%d].needs", i), ErrCycle, "step %q needs itself", s.ID)
			}
		}
	}
	v.checkPlaceholders(raw, f)
	if len(v.errs) > 0 {
		return
	}
	order, cyc := topoOrder(raw.Steps, index)
	if cyc >= 0 {
		v.add(l.ElementLine("steps", cyc, "needs"), fmt.Sprintf("steps[%d].needs", cyc), ErrCycle, "step %q is part of a needs cycle", raw.Steps[cyc].ID)
		return
	}
	for _, i := range order {
		s := raw.Steps[i]
		f.Steps = append(f.Steps, Step{ID: s.ID, Title: strings.TrimSpace(s.Title), Description: strings.TrimSpace(s.Description), Needs: s.Needs})
	}
}

// checkPlaceholders reports {{name}} references without a [vars] entry.
func (v *validator) checkPlaceholders(raw *rawFormula, f *Formula) {
	check := func(text string, line int, field string) {
		for _, m := range placeholderRe.FindAllStringSubmatch(text, -1) {
			if _, ok := raw.Vars[m[1]]; !ok {
				v.add(line, field, ErrUndeclaredVar, "{{%s}} has no [vars.%s] entry", m[1], m[1])
			}
		}
	}
	check(raw.Description, v.loc.Line("description"), "description")
	for i, s := range raw.Steps {
		check(s.Title, v.loc.ElementLine("steps", i, "title"), fmt.Sprintf("steps[%d].title", i))
		// Point at the placeholder's own line inside the description.
		for _, m := range placeholderRe.FindAllStringSubmatchIndex(s.Description, -1) {
			name := s.Description[m[2]:m[3]]
			if _, ok := raw.Vars[name]; ok {
				continue
			}
			line := v.loc.ElementLine("steps", i, "description")
			if line > 0 {
				opens := v.loc.OpensMultiline(line)
				line += strings.Count(s.Description[:m[0]], "\n")
				if opens {
					// The decoder drops the newline right after the opener.
					line++
				}
			}
			v.add(line, fmt.Sprintf("steps[%d].description", i), ErrUndeclaredVar, "{{%s}} has no [vars.%s] entry", name, name)
		}
	}
}

// topoOrder sorts steps so that every step follows its needs, keeping
// declaration order among steps that are ready together. It returns the
// index of a step on a cycle, or -1.
func topoOrder(steps []rawStep, index map[string]int) ([]int, int) {
	indeg := make([]int, len(steps))
	next := make([][]int, len(steps))
	for i, s := range steps {
		for _, n := range s.Needs {
			j := index[n]
			indeg[i]++
			next[j] = append(next[j], i)
		}
	}
	done := make([]bool, len(steps))
	var order []int
	for len(order) < len(steps) {
		picked := -1
		for i := range steps {
			if !done[i] && indeg[i] == 0 {
				picked = i
				break
			}
		}
		if picked < 0 {
			return nil, onCycle(steps, index, done)
		}
		done[picked] = true
		order = append(order, picked)
		for _, j := range next[picked] {
			indeg[j]--
		}
	}
	return order, -1
}

// onCycle walks unfinished needs from the first unfinished step until a
// step repeats; that step is on a cycle.
func onCycle(steps []rawStep, index map[string]int, done []bool) int {
	cur := 0
	for done[cur] {
		cur++
	}
	seen := map[int]bool{}
	for !seen[cur] {
		seen[cur] = true
		for _, n := range steps[cur].Needs {
			if j := index[n]; !done[j] {
				cur = j
				break
			}
		}
	}
	return cur
}
