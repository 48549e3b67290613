package graph

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
)

// Default locations in the ops repository (spec 40 §2.2, 00 §3.2).
const (
	DefaultTreePath    = "prerequisites.md"
	DefaultEvidenceDir = "evidence"
	DefaultMapPath     = "graph/files.toml"
)

// DefaultEvidenceCategories are the evidence directories the ops layout
// has (spec 00 §3.2); files directly in the evidence directory count too.
var DefaultEvidenceCategories = []string{"engagement", "red-team", "holdout", "evolution", "user-test"}

// Forge is what the graph reads of the project's tracker. ListIssues
// returns every page; an error wrapping forge.ErrUnavailable (or any
// other error) makes the build go on without the forge's data.
type Forge interface {
	ListIssues(ctx context.Context, q forge.IssueQuery) ([]forge.Issue, error)
	ListLabels(ctx context.Context) ([]forge.Label, error)
}

// Options says where the graph's inputs are.
type Options struct {
	// Forge is the project's tracker; nil means none (sources.forge is
	// "unavailable").
	Forge Forge
	// Ops holds the tree, the evidence and the mapping file; nil means
	// none.
	Ops Files
	// Project is the project repository at its primary branch, for
	// VISION.md and the AGENTS.md files; nil means none.
	Project Files
	// TreePath, EvidenceDir and MapPath locate the tree, the evidence and
	// the mapping file in Ops; defaults DefaultTreePath,
	// DefaultEvidenceDir and DefaultMapPath.
	TreePath, EvidenceDir, MapPath string
	// EvidenceCategories are the subdirectories of EvidenceDir read;
	// default DefaultEvidenceCategories.
	EvidenceCategories []string
	// Agents is the agent registry (the roles); default none.
	Agents []string
	// Labels is the label vocabulary formulas are searched for, besides
	// the forge's labels; default the registry of lib/forge.
	Labels []string
	// Formulas are the formulas in force, name → text.
	Formulas map[string]string
	// Mappings are extra file → node mappings, after those of MapPath.
	Mappings []Mapping
	// Log receives one line per input that could not be read.
	Log zerolog.Logger
}

// Input states of Sources.
const (
	SourceOK          = "ok"
	SourceUnavailable = "unavailable"
	SourceMissing     = "missing"
)

// Sources says what the graph was built from: "ok" or "unavailable" for
// the forge; the path read, or "missing", for the tree, the evidence and
// the mapping file.
type Sources struct {
	Forge    string `json:"forge"`
	Tree     string `json:"tree"`
	Evidence string `json:"evidence"`
	Mappings string `json:"mappings"`
	// ForgeError is why the forge was unavailable (redacted by the forge
	// client).
	ForgeError string `json:"forge_error,omitempty"`
	// Errors are the inputs that were present but could not be read.
	Errors []string `json:"errors"`
}

// Built is a graph and what it was built from.
type Built struct {
	Graph      *Graph
	Sources    Sources
	Objectives []Objective
	// Mapper maps changed files to nodes for Affected.
	Mapper *Mapper
}

// builder holds one build.
type builder struct {
	o   Options
	g   *Graph
	src Sources
	// mapper resolves paths named in text.
	mapper *Mapper
	// vision are the sections of the project's VISION.md.
	vision []section
}

// Build reads the inputs o names and builds the graph. A missing or
// unreadable input is said in Sources, never an error: the graph is what
// could be read. Only a cancelled ctx is an error.
func Build(ctx context.Context, o Options) (*Built, error) {
	o = withDefaults(o)
	b := &builder{o: o, g: New(), src: Sources{Errors: []string{}}}
	b.mapper = NewMapper(o.Agents, append(b.readMappings(), o.Mappings...))
	objectives := b.readTree()
	b.addTree(objectives)
	b.addAgentsAndFormulas()
	b.addDocs()
	b.addEvidence()
	b.addForge(ctx, objectives)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Built{Graph: b.g, Sources: b.src, Objectives: objectives, Mapper: b.mapper}, nil
}

// withDefaults fills in the defaults of o.
func withDefaults(o Options) Options {
	o.TreePath = cmpOr(o.TreePath, DefaultTreePath)
	o.EvidenceDir = strings.TrimSuffix(cmpOr(o.EvidenceDir, DefaultEvidenceDir), "/")
	o.MapPath = cmpOr(o.MapPath, DefaultMapPath)
	if o.EvidenceCategories == nil {
		o.EvidenceCategories = DefaultEvidenceCategories
	}
	if o.Labels == nil {
		for _, l := range forge.Registry() {
			o.Labels = append(o.Labels, string(l.Name))
		}
	}
	return o
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// read reads p from f; ok is false when it is missing or unreadable (the
// latter is recorded).
func (b *builder) read(f Files, where, p string) ([]byte, bool) {
	if f == nil {
		return nil, false
	}
	data, err := f.Read(p)
	if err != nil {
		if !isNotExist(err) {
			b.src.Errors = append(b.src.Errors, fmt.Sprintf("%s %s: %v", where, p, err))
			b.o.Log.Warn().Err(err).Str("file", p).Msg("graph input unreadable")
		}
		return nil, false
	}
	return data, true
}

// readMappings reads the mapping file of the ops repository.
func (b *builder) readMappings() []Mapping {
	b.src.Mappings = SourceMissing
	data, ok := b.read(b.o.Ops, "ops", b.o.MapPath)
	if !ok {
		return nil
	}
	maps, err := ParseMappings(b.o.MapPath, data)
	if err != nil {
		b.src.Errors = append(b.src.Errors, err.Error())
		return nil
	}
	b.src.Mappings = b.o.MapPath
	return maps
}

// readTree reads the prerequisite tree.
func (b *builder) readTree() []Objective {
	b.src.Tree = SourceMissing
	data, ok := b.read(b.o.Ops, "ops", b.o.TreePath)
	if !ok {
		return nil
	}
	b.src.Tree = b.o.TreePath
	return ParseTree(string(data))
}

// addTree adds the objectives and prerequisites, the blocks edges from
// each prerequisite to its objective and the supports edges from what a
// prerequisite names in backticks.
func (b *builder) addTree(objectives []Objective) {
	for _, o := range objectives {
		b.g.Add(Node{ID: o.ID(), Type: TypeObjective, Label: o.Name, Status: o.Status})
		if o.Issue > 0 {
			b.g.Link(issueID(o.Issue), o.ID(), RelImplements)
		}
		for _, p := range o.Prereqs {
			b.g.Add(Node{ID: p.ID(), Type: TypePrereq, Label: p.Text, Done: p.Done})
			b.g.Link(p.ID(), o.ID(), RelBlocks)
			for _, n := range p.Issues {
				b.g.Link(issueID(n), p.ID(), RelImplements)
			}
			b.addMentions(p.Text, p.ID())
		}
	}
}

// addMentions links the nodes the paths named in text stand for to id.
func (b *builder) addMentions(text, id string) {
	for _, p := range mentionedPaths(text) {
		for _, n := range b.mapper.Nodes(p) {
			b.addTyped(n)
			b.g.Link(n, id, RelSupports)
		}
	}
}

// prefixTypes are the node types by the prefix of their ids.
var prefixTypes = map[string]Type{"file": TypeFile, "infrastructure": TypeInfra, "formula": TypeFormula, "agent": TypeAgent,
	"evidence": TypeEvidence, "objective": TypeObjective, "prereq": TypePrereq, "issue": TypeIssue, "label": TypeLabel}

// addTyped adds the node n with the type its id's prefix names.
func (b *builder) addTyped(id string) {
	prefix, _, _ := strings.Cut(id, ":")
	t := prefixTypes[prefix]
	if _, ok := b.g.Node(id); ok && t == "" {
		return
	}
	b.g.Add(Node{ID: id, Type: t})
}

// tokenRE splits a formula name into words.
var tokenRE = regexp.MustCompile(`[^a-z0-9]+`)

// addAgentsAndFormulas adds the agents, the formulas, which agent runs
// which (an agent's name is a word of the formula's name: dev runs dev,
// planner runs run-planner, review runs review-pr) and the labels each
// formula names.
func (b *builder) addAgentsAndFormulas() {
	for _, a := range b.o.Agents {
		b.g.Add(Node{ID: "agent:" + a, Type: TypeAgent, Label: a})
	}
	names := make([]string, 0, len(b.o.Formulas))
	for n := range b.o.Formulas {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		id := "formula:" + name
		b.g.Add(Node{ID: id, Type: TypeFormula, Label: name})
		words := tokenRE.Split(strings.ToLower(name), -1)
		for _, a := range b.o.Agents {
			if slices.Contains(words, strings.ToLower(a)) {
				b.g.Link("agent:"+a, id, RelExecutes)
			}
		}
		text := b.o.Formulas[name]
		for _, l := range b.o.Labels {
			if mentionsLabel(text, l) {
				b.g.Add(Node{ID: "label:" + l, Type: TypeLabel, Label: l})
				b.g.Link(id, "label:"+l, RelProduces)
			}
		}
	}
}

// mentionsLabel reports whether text names label as a word of its own.
func mentionsLabel(text, label string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], label)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(label)
		if (start == 0 || !isLabelByte(text[start-1])) && (end == len(text) || !isLabelByte(text[end])) {
			return true
		}
		i = start + 1
	}
}

// isLabelByte reports whether c continues a label name.
func isLabelByte(c byte) bool {
	return c == '-' || c == '_' || c == '/' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// addDocs adds the sections of VISION.md and of the AGENTS.md files of
// the project and the agents they define.
func (b *builder) addDocs() {
	if data, ok := b.read(b.o.Project, "project", "VISION.md"); ok {
		b.vision = sections(string(data))
		for _, s := range b.vision {
			b.g.Add(Node{ID: "doc:VISION/" + s.slug, Type: TypeDocSection, Label: s.title})
		}
	}
	files := []string{"AGENTS.md"}
	for _, a := range b.o.Agents {
		files = append(files, a+"/AGENTS.md", "agents/"+a+"/AGENTS.md")
	}
	for _, f := range files {
		data, ok := b.read(b.o.Project, "project", f)
		if !ok {
			continue
		}
		doc := strings.TrimSuffix(f, ".md")
		for _, s := range sections(string(data)) {
			id := "doc:" + doc + "/" + s.slug
			b.g.Add(Node{ID: id, Type: TypeDocSection, Label: s.title})
			words := tokenRE.Split(strings.ToLower(s.title+" "+path.Dir(f)), -1)
			for _, a := range b.o.Agents {
				if slices.Contains(words, strings.ToLower(a)) {
					b.g.Link(id, "agent:"+a, RelDefines)
				}
			}
		}
	}
}

// section is one heading of a Markdown document and the text under it.
type section struct {
	title, slug, body string
}

// headingRE matches a heading of level 1 to 3.
var headingRE = regexp.MustCompile(`^#{1,3}\s+(.+?)\s*#*\s*$`)

// sections splits a document at its headings of level 1 to 3.
func sections(doc string) []section {
	var out []section
	for line := range strings.SplitSeq(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			if s := Slug(m[1]); s != "" {
				out = append(out, section{title: m[1], slug: s})
				continue
			}
		}
		if len(out) > 0 {
			out[len(out)-1].body += line + "\n"
		}
	}
	return out
}

// addEvidence adds the evidence files and what each backs: the
// prerequisites whose slug its lower-cased text contains.
func (b *builder) addEvidence() {
	b.src.Evidence = SourceMissing
	if b.o.Ops == nil {
		return
	}
	prereqs := b.g.OfType(TypePrereq)
	dirs := []string{b.o.EvidenceDir}
	for _, c := range b.o.EvidenceCategories {
		dirs = append(dirs, b.o.EvidenceDir+"/"+c)
	}
	found := false
	for _, dir := range dirs {
		files, err := b.o.Ops.List(dir)
		if err != nil {
			b.src.Errors = append(b.src.Errors, fmt.Sprintf("ops %s: %v", dir, err))
			continue
		}
		for _, f := range files {
			found = true
			if path.Ext(f) != ".json" {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimSuffix(f, ".json"), b.o.EvidenceDir+"/")
			cat, _, _ := strings.Cut(rel, "/")
			id := "evidence:" + rel
			b.g.Add(Node{ID: id, Type: TypeEvidence, Label: rel, Category: cat})
			data, ok := b.read(b.o.Ops, "ops", f)
			if !ok {
				continue
			}
			text := strings.ToLower(string(data))
			for _, p := range prereqs {
				if s := strings.TrimPrefix(p, "prereq:"); s != "" && strings.Contains(text, s) {
					b.g.Link(id, p, RelEvidences)
				}
			}
		}
	}
	if found {
		b.src.Evidence = b.o.EvidenceDir
	}
}

// issueID is the node id of issue n.
func issueID(n int64) string { return "issue:" + strconv.FormatInt(n, 10) }

// blocksRE finds "block #N" and "blocks #N".
var blocksRE = regexp.MustCompile(`(?i)\bblocks?\s+#([0-9]{1,12})\b`)

// addForge adds the labels and the issues, open and closed, and their
// edges. A forge that cannot be read is said in Sources.
func (b *builder) addForge(ctx context.Context, objectives []Objective) {
	b.src.Forge = SourceUnavailable
	if b.o.Forge == nil {
		b.src.ForgeError = "no forge configured"
		return
	}
	labels, err := b.o.Forge.ListLabels(ctx)
	if err == nil {
		var issues []forge.Issue
		issues, err = b.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
		if err == nil {
			b.src.Forge = SourceOK
			for _, l := range labels {
				b.g.Add(Node{ID: "label:" + string(l.Name), Type: TypeLabel, Label: string(l.Name)})
			}
			b.addIssues(issues, objectives)
			return
		}
	}
	if ctx.Err() == nil {
		b.o.Log.Warn().Err(err).Msg("graph: forge unavailable; the report has the local nodes only")
	}
	b.src.ForgeError = err.Error()
}

// addIssues adds the issues and their edges (spec 40 §5.3).
func (b *builder) addIssues(issues []forge.Issue, objectives []Objective) {
	for _, is := range issues {
		id := issueID(is.Number)
		b.g.Add(Node{ID: id, Type: TypeIssue, Label: is.Title, Status: string(is.State)})
		for _, l := range is.Labels {
			b.g.Add(Node{ID: "label:" + string(l), Type: TypeLabel, Label: string(l)})
			b.g.Link(id, "label:"+string(l), RelUsesLabel)
		}
		text := Slug(is.Title + " " + is.Body)
		for _, o := range objectives {
			if s := Slug(o.Name); s != "" && strings.Contains(text, s) {
				b.g.Link(id, o.ID(), RelImplements)
			}
		}
		for _, n := range deps.ParseFor(is.Number, is.Body) {
			b.g.Link(issueID(n), id, RelBlocks) // #n must land before this issue
		}
		for _, m := range blocksRE.FindAllStringSubmatch(is.Body, -1) {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil && n > 0 {
				b.g.Link(id, issueID(n), RelBlocks)
			}
		}
		for _, n := range issueRefs(is.Body) {
			b.g.Link(id, issueID(n), RelReferences)
		}
		for _, s := range b.vision {
			if slices.Contains(issueRefs(s.body), is.Number) {
				b.g.Link(id, "doc:VISION/"+s.slug, RelReferences)
			}
		}
		b.addMentions(is.Body, id)
	}
}
