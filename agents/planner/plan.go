package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/disinto/disinto/lib/text"
)

// PlanFile is the session's outbox: its plan, as JSON. Nothing else the
// session writes reaches the tracker or the ops repository.
const PlanFile = "plan.json"

// EnvPlan names the outbox for the session.
const EnvPlan = "DISINTO_PLANNER_PLAN"

// Plan is what the session proposes. Every part is optional: a part left
// out changes nothing (Priority nil leaves the priority labels alone;
// an empty list removes them all).
type Plan struct {
	// Tree is the prerequisite tree, whole.
	Tree *Tree `json:"tree,omitempty"`
	// Triage decides open predictions.
	Triage []Triage `json:"triage,omitempty"`
	// Issues are the issues to file, most important first.
	Issues []Proposal `json:"issues,omitempty"`
	// Priority are the issues of the current top constraints.
	Priority []IssueRef `json:"priority,omitempty"`
	// Procurement are requests for a human decision or resource.
	Procurement []Procurement `json:"procurement,omitempty"`
	// Memory is the planner's memory, rewritten whole; read only on the
	// runs the orchestrator asks for it.
	Memory string `json:"memory,omitempty"`
}

// Tree is the prerequisite tree (spec 40 §2.4) as data; Render writes the
// markdown lib/graph parses.
type Tree struct {
	Objectives []Objective `json:"objectives"`
}

// Objective is one objective of the tree.
type Objective struct {
	Name string `json:"name"`
	// Issue is the objective's own issue, 0 for none.
	Issue int64 `json:"issue,omitempty"`
	// Status is READY, BLOCKED or DONE; Reason says what blocks it.
	Status        string   `json:"status"`
	Reason        string   `json:"reason,omitempty"`
	Prerequisites []Prereq `json:"prerequisites"`
}

// Prereq is one prerequisite of an objective.
type Prereq struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
	// Issue is the open or closed issue the prerequisite stands for; Ref
	// an issue this plan files instead.
	Issue int64  `json:"issue,omitempty"`
	Ref   string `json:"ref,omitempty"`
	// Procurement is the slug of the request it waits for
	// (blocked-on-vault).
	Procurement string `json:"procurement,omitempty"`
}

// Decision is the planner's answer to a prediction (spec 40 §4).
type Decision string

// The two decisions; there is no third.
const (
	// Action agrees: a follow-up issue is filed (or an open one named),
	// the prediction is labelled prediction/actioned and closed.
	Action Decision = "action"
	// Dismiss disagrees: the prediction is labelled prediction/dismissed
	// and closed.
	Dismiss Decision = "dismiss"
)

// Triage decides one open prediction, with the reasoning commented on it.
type Triage struct {
	Prediction int64    `json:"prediction"`
	Decision   Decision `json:"decision"`
	Reasoning  string   `json:"reasoning"`
	// FollowUp is the ref of the issue of this plan an action files;
	// Existing an open issue that already carries the work.
	FollowUp string `json:"follow_up,omitempty"`
	Existing int64  `json:"existing,omitempty"`
}

// Kind is what label a proposed issue gets.
type Kind string

// The kinds of issue the planner files: only labels with a consumer
// (spec 40 §2.9.8).
const (
	Backlog Kind = "backlog"
	Vision  Kind = "vision"
)

// Proposal is one issue the session proposes.
type Proposal struct {
	// Ref names the proposal within the plan (tree prerequisites,
	// triage follow-ups and priorities refer to it).
	Ref  string `json:"ref"`
	Kind Kind   `json:"kind"`
	// Template is bug, feature or refactor (a backlog issue's shape).
	Template      string   `json:"template,omitempty"`
	Title         string   `json:"title"`
	Problem       string   `json:"problem"`
	Solution      string   `json:"proposed_solution,omitempty"`
	AffectedFiles []string `json:"affected_files,omitempty"`
	Acceptance    []string `json:"acceptance_criteria,omitempty"`
	// WhyVision says why a vision issue needs design first.
	WhyVision string `json:"why_vision,omitempty"`
	// Objectives are the names of the objectives it unblocks.
	Objectives []string `json:"objectives,omitempty"`
}

// IssueRef names an issue: an existing one, or one this plan files.
type IssueRef struct {
	Issue int64  `json:"issue,omitempty"`
	Ref   string `json:"ref,omitempty"`
}

// Procurement is a request to a human (spec 40 §6 A): a markdown file
// under vault/pending/ in the ops repository, never executed.
type Procurement struct {
	Slug        string   `json:"slug"`
	Title       string   `json:"title"`
	What        string   `json:"what"`
	Why         string   `json:"why"`
	HumanAction []string `json:"human_action"`
	FactoryWill string   `json:"factory_will"`
	Unblocks    []int64  `json:"unblocks,omitempty"`
}

// ErrPlan wraps every reason the plan, or a part of it, is refused.
var ErrPlan = errors.New("invalid plan")

// Bounds of the plan.
const (
	maxTitle       = 200
	maxText        = 8 << 10
	maxMemory      = 16 << 10
	maxMemoryLines = 100
	maxItems       = 64
	maxObjectives  = 64
	maxPrereqs     = 64
	// Template limits of a backlog issue (spec 40 §2.7).
	maxAffected   = 3
	maxAcceptance = 5
)

var (
	refRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,59}$`)
	// statuses are the first words of a Status line (spec 40 §2.4).
	statuses = map[string]bool{"READY": true, "BLOCKED": true, "DONE": true}
	// templates are the backlog issue shapes.
	templates = map[string]bool{"bug": true, "feature": true, "refactor": true}
)

// ParsePlan decodes the outbox strictly: a field the schema does not
// know, or a file that is not one JSON object, refuses the plan whole.
// The parts are validated one by one (Validate); a refused part is
// returned with its reason, the rest stands.
func ParsePlan(data []byte) (Plan, []error, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return Plan{}, nil, fmt.Errorf("%s: %w: %w", PlanFile, ErrPlan, err)
	}
	if dec.More() {
		return Plan{}, nil, fmt.Errorf("%s: %w: more than one JSON value", PlanFile, ErrPlan)
	}
	for name, n := range map[string]int{"triage": len(p.Triage), "issues": len(p.Issues),
		"priority": len(p.Priority), "procurement": len(p.Procurement)} {
		if n > maxItems {
			return Plan{}, nil, fmt.Errorf("%s: %w: %d %s entries, at most %d", PlanFile, ErrPlan, n, name, maxItems)
		}
	}
	return p.validated()
}

// validated drops the parts that break a rule and says why.
func (p Plan) validated() (Plan, []error, error) {
	var refused []error
	refuse := func(where string, err error) {
		refused = append(refused, fmt.Errorf("%s: %s: %w: %w", PlanFile, where, ErrPlan, err))
	}
	out := Plan{Priority: p.Priority}
	if p.Tree != nil {
		if err := p.Tree.Validate(); err != nil {
			refuse("tree", err)
		} else {
			out.Tree = p.Tree
		}
	}
	refs := map[string]bool{}
	for i, pr := range p.Issues {
		if err := pr.Validate(); err != nil {
			refuse(fmt.Sprintf("issues[%d]", i), err)
			continue
		}
		if refs[pr.Ref] {
			refuse(fmt.Sprintf("issues[%d]", i), fmt.Errorf("ref %q is used twice", pr.Ref))
			continue
		}
		refs[pr.Ref] = true
		out.Issues = append(out.Issues, pr.trimmed())
	}
	for i, t := range p.Triage {
		if err := t.Validate(); err != nil {
			refuse(fmt.Sprintf("triage[%d]", i), err)
			continue
		}
		out.Triage = append(out.Triage, t)
	}
	for i, q := range p.Procurement {
		if err := q.Validate(); err != nil {
			refuse(fmt.Sprintf("procurement[%d]", i), err)
			continue
		}
		out.Procurement = append(out.Procurement, q)
	}
	if len(p.Priority) > maxConstraints {
		refuse("priority", fmt.Errorf("%d issues, at most the top %d constraints", len(p.Priority), maxConstraints))
		out.Priority = nil
	}
	for i, r := range out.Priority {
		if (r.Issue > 0) == (r.Ref != "") || r.Issue < 0 {
			refuse(fmt.Sprintf("priority[%d]", i), errors.New("name either an issue or a ref"))
			out.Priority = nil
			break
		}
	}
	if p.Memory != "" {
		if err := validMemory(p.Memory); err != nil {
			refuse("memory", err)
		} else {
			out.Memory = p.Memory
		}
	}
	return out, refused, nil
}

// maxConstraints is how many constraints carry the priority label (spec
// 40 §2.4: the top five).
const maxConstraints = 5

// Validate checks the tree: named objectives with a known status, and
// prerequisites that are one line each.
func (t *Tree) Validate() error {
	if len(t.Objectives) == 0 {
		return errors.New("the tree has no objective")
	}
	if len(t.Objectives) > maxObjectives {
		return fmt.Errorf("%d objectives, at most %d", len(t.Objectives), maxObjectives)
	}
	seen := map[string]bool{}
	for i, o := range t.Objectives {
		if err := oneLineText(o.Name, maxTitle); err != nil {
			return fmt.Errorf("objectives[%d].name: %w", i, err)
		}
		if seen[strings.ToLower(oneLine(o.Name))] {
			return fmt.Errorf("objectives[%d]: objective %q twice", i, o.Name)
		}
		seen[strings.ToLower(oneLine(o.Name))] = true
		if !statuses[o.Status] {
			return fmt.Errorf("objectives[%d].status %q is not READY, BLOCKED or DONE", i, o.Status)
		}
		if o.Reason != "" {
			if err := oneLineText(o.Reason, maxTitle); err != nil {
				return fmt.Errorf("objectives[%d].reason: %w", i, err)
			}
		}
		if o.Issue < 0 || len(o.Prerequisites) > maxPrereqs {
			return fmt.Errorf("objectives[%d]: a negative issue or more than %d prerequisites", i, maxPrereqs)
		}
		for j, q := range o.Prerequisites {
			if err := oneLineText(q.Text, maxTitle*2); err != nil {
				return fmt.Errorf("objectives[%d].prerequisites[%d].text: %w", i, j, err)
			}
			if q.Issue < 0 || (q.Issue > 0 && q.Ref != "") {
				return fmt.Errorf("objectives[%d].prerequisites[%d]: name an issue or a ref, not both", i, j)
			}
			if q.Ref != "" && !refRE.MatchString(q.Ref) {
				return fmt.Errorf("objectives[%d].prerequisites[%d].ref %q is not a ref", i, j, q.Ref)
			}
			if q.Procurement != "" && !slugRE.MatchString(q.Procurement) {
				return fmt.Errorf("objectives[%d].prerequisites[%d].procurement %q is not a slug", i, j, q.Procurement)
			}
		}
	}
	return nil
}

// Validate checks one proposed issue against the schema and the
// template: a backlog issue has a template, a solution, affected files
// and acceptance criteria; a vision issue says why it is one. A backlog
// proposal beyond the template's limits is filed as vision (Gate).
func (p Proposal) Validate() error {
	if !refRE.MatchString(p.Ref) {
		return fmt.Errorf("ref %q is not a ref (a-z, 0-9, - and _, at most 40)", p.Ref)
	}
	if err := oneLineText(p.Title, maxTitle); err != nil {
		return fmt.Errorf("title: %w", err)
	}
	if strings.TrimSpace(p.Problem) == "" {
		return errors.New("problem is empty")
	}
	switch p.Kind {
	case Backlog:
		if !templates[p.Template] {
			return fmt.Errorf("template %q is not bug, feature or refactor", p.Template)
		}
		if strings.TrimSpace(p.Solution) == "" || len(p.AffectedFiles) == 0 || len(p.Acceptance) == 0 {
			return errors.New("a backlog issue needs proposed_solution, affected_files and acceptance_criteria")
		}
	case Vision:
		if strings.TrimSpace(p.WhyVision) == "" {
			return errors.New("a vision issue needs why_vision")
		}
	default:
		return fmt.Errorf("kind %q is not backlog or vision", p.Kind)
	}
	if len(p.AffectedFiles) > 32 || len(p.Acceptance) > 32 || len(p.Objectives) > 16 {
		return errors.New("too many affected files, acceptance criteria or objectives")
	}
	texts := []string{p.Title, p.Problem, p.Solution, p.WhyVision}
	for _, l := range [][]string{p.AffectedFiles, p.Acceptance, p.Objectives} {
		for _, s := range l {
			if err := oneLineText(s, maxTitle*2); err != nil {
				return fmt.Errorf("list entry %q: %w", clipped(s), err)
			}
			texts = append(texts, s)
		}
	}
	return boundedTexts(texts...)
}

// Validate checks one triage decision's shape; whether the prediction is
// open is decided against the tracker (Decide).
func (t Triage) Validate() error {
	if t.Prediction <= 0 {
		return errors.New("prediction is not an issue number")
	}
	if strings.TrimSpace(t.Reasoning) == "" {
		return errors.New("every decision needs its reasoning")
	}
	switch t.Decision {
	case Action:
		if (t.FollowUp != "") == (t.Existing > 0) {
			return errors.New("an action names its follow_up ref or an existing issue, one of them")
		}
	case Dismiss:
		if t.FollowUp != "" || t.Existing != 0 {
			return errors.New("a dismissal files no follow-up")
		}
	default:
		return fmt.Errorf("decision %q is not action or dismiss", t.Decision)
	}
	return boundedTexts(t.Reasoning)
}

// Validate checks one procurement request: a slug, the texts of its
// sections and at least one concrete human step.
func (q Procurement) Validate() error {
	if !slugRE.MatchString(q.Slug) {
		return fmt.Errorf("slug %q is not a slug (a-z, 0-9 and -)", q.Slug)
	}
	if err := oneLineText(q.Title, maxTitle); err != nil {
		return fmt.Errorf("title: %w", err)
	}
	for name, s := range map[string]string{"what": q.What, "why": q.Why, "factory_will": q.FactoryWill} {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s is empty", name)
		}
	}
	if len(q.HumanAction) == 0 || len(q.HumanAction) > 16 {
		return errors.New("human_action needs 1 to 16 concrete steps")
	}
	for _, n := range q.Unblocks {
		if n <= 0 {
			return errors.New("unblocks names issue numbers")
		}
	}
	return boundedTexts(append([]string{q.Title, q.What, q.Why, q.FactoryWill}, q.HumanAction...)...)
}

// validMemory bounds the memory: fewer than 100 lines, no HTML comment
// (the orchestrator writes the run marker).
func validMemory(s string) error {
	if len(s) > maxMemory || strings.Count(strings.TrimRight(s, "\n"), "\n")+1 >= maxMemoryLines {
		return fmt.Errorf("the memory must stay under %d lines and %d KiB", maxMemoryLines, maxMemory>>10)
	}
	if strings.Contains(s, "<!--") {
		return errors.New("the memory carries an HTML comment")
	}
	return nil
}

// oneLineText checks a one-line field: present, bounded, without a line
// break or an HTML comment.
func oneLineText(s string, limit int) error {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return errors.New("empty")
	case len(s) > limit:
		return fmt.Errorf("longer than %d bytes", limit)
	case strings.ContainsAny(s, "\n\r"):
		return errors.New("more than one line")
	case strings.Contains(s, "<!--"):
		return errors.New("carries an HTML comment")
	}
	return nil
}

// boundedTexts checks free texts: bounded, without an HTML comment (no
// text of the model passes for a marker).
func boundedTexts(texts ...string) error {
	for _, s := range texts {
		if len(s) > maxText {
			return fmt.Errorf("a text is longer than %d KiB", maxText>>10)
		}
		if strings.Contains(s, "<!--") {
			return errors.New("a text carries an HTML comment")
		}
	}
	return nil
}

// trimmed returns p with its one-line fields trimmed.
func (p Proposal) trimmed() Proposal {
	p.Title = oneLine(p.Title)
	for i, f := range p.AffectedFiles {
		p.AffectedFiles[i] = strings.Trim(strings.TrimSpace(f), "`")
	}
	return p
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clipped(s string) string { return text.Clip(s, 40) }
