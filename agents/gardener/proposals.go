package gardener

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// ProposalsFile is the session's outbox: its judgement on the issues it
// was shown, as JSON. Nothing else the session writes changes the
// tracker.
const ProposalsFile = "proposals.json"

// EnvProposals names the outbox for the session.
const EnvProposals = "DISINTO_GARDENER_PROPOSALS"

// Verdict is the model's classification of one issue.
type Verdict string

// The classifications the model may give.
const (
	Ore     Verdict = "ore"     // worth a dev cycle: promote, enriched
	Dust    Verdict = "dust"    // trivial: stage for bundling
	Bug     Verdict = "bug"     // a bug report: enrich, label bug-report
	Feature Verdict = "feature" // a feature request: leave it
	Skip    Verdict = "skip"    // no decision this run
)

// Proposal is the model's judgement on one issue. Which fields count
// depends on Kind: ore and promotions take Criteria and Files; dust takes
// Group; a bug takes the four report sections.
type Proposal struct {
	Issue    int64    `json:"issue"`
	Kind     Verdict  `json:"kind"`
	Reason   string   `json:"reason,omitempty"`
	Group    string   `json:"group,omitempty"`
	Criteria []string `json:"acceptance_criteria,omitempty"`
	Files    []string `json:"affected_files,omitempty"`
	// Bug report sections.
	Reported     string   `json:"what_was_reported,omitempty"`
	Context      string   `json:"known_context,omitempty"`
	Plan         string   `json:"reproduction_plan,omitempty"`
	Verification []string `json:"what_needs_verification,omitempty"`
}

// Proposals is the outbox's content.
type Proposals struct {
	Issues []Proposal `json:"issues"`
}

// ErrProposal wraps every reason a proposal is refused.
var ErrProposal = errors.New("invalid proposal")

const maxProposalText = 4 << 10

// parseProposals decodes the outbox; asked is the issues the session was
// asked about and what it may say of each. A proposal about another issue
// or of a kind not asked for is refused; so is the whole file when it is
// not the schema.
func parseProposals(data []byte, asked map[int64][]Verdict) (map[int64]Proposal, []error, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var p Proposals
	if err := dec.Decode(&p); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %w", ProposalsFile, ErrProposal, err)
	}
	out := map[int64]Proposal{}
	var refused []error
	for _, pr := range p.Issues {
		if err := pr.check(asked[pr.Issue]); err != nil {
			refused = append(refused, fmt.Errorf("%s: issue #%d: %w: %w", ProposalsFile, pr.Issue, ErrProposal, err))
			continue
		}
		if _, dup := out[pr.Issue]; dup {
			refused = append(refused, fmt.Errorf("%s: issue #%d: %w: two proposals", ProposalsFile, pr.Issue, ErrProposal))
			continue
		}
		out[pr.Issue] = pr
	}
	return out, refused, nil
}

func (p Proposal) check(allowed []Verdict) error {
	if len(allowed) == 0 {
		return errors.New("not an issue this run asked about")
	}
	ok := p.Kind == Skip
	for _, k := range allowed {
		ok = ok || k == p.Kind
	}
	if !ok {
		return fmt.Errorf("kind %q not one of %v", p.Kind, allowed)
	}
	texts := append(append(append([]string{p.Reason, p.Group, p.Reported, p.Context, p.Plan}, p.Criteria...), p.Files...), p.Verification...)
	for _, s := range texts {
		if len(s) > maxProposalText {
			return errors.New("a text is too long")
		}
		if strings.Contains(s, "<!--") {
			return errors.New("a text carries an HTML comment")
		}
	}
	switch p.Kind {
	case Ore:
		if len(p.Criteria) == 0 || len(p.Files) == 0 {
			return errors.New("ore needs acceptance_criteria and affected_files")
		}
		for _, f := range p.Files {
			if !fileLikeRe.MatchString(strings.TrimSpace(f)) {
				return fmt.Errorf("affected file %q is not a path", f)
			}
		}
	case Dust:
		if strings.TrimSpace(p.Group) == "" || strings.ContainsAny(p.Group, "\n`") {
			return errors.New("dust needs a one-line group")
		}
	case Bug:
		if strings.TrimSpace(p.Reported) == "" || strings.TrimSpace(p.Context) == "" || strings.TrimSpace(p.Plan) == "" {
			return errors.New("a bug needs what_was_reported, known_context and reproduction_plan")
		}
		if n := len(p.Verification); n < 3 || n > 5 {
			return fmt.Errorf("a bug needs 3 to 5 what_needs_verification items, not %d", n)
		}
	}
	return nil
}

// enrich returns body with the sections the quality gate wants, appended
// where missing, from the proposal.
func enrich(body string, p Proposal) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\n"))
	if !hasCriteria(body) {
		b.WriteString("\n\n## Acceptance criteria\n\n")
		for _, c := range p.Criteria {
			fmt.Fprintf(&b, "- [ ] %s\n", oneLine(c))
		}
	}
	if !hasAffectedFiles(body) {
		b.WriteString("\n## Affected files\n\n")
		for _, f := range p.Files {
			fmt.Fprintf(&b, "- `%s`\n", strings.TrimSpace(f))
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// bugBody returns body with the four bug-report sections appended.
func bugBody(body string, p Proposal) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(body, "\n"))
	fmt.Fprintf(&b, "\n\n## What was reported\n\n%s\n", strings.TrimSpace(p.Reported))
	fmt.Fprintf(&b, "\n## Known context\n\n%s\n", strings.TrimSpace(p.Context))
	fmt.Fprintf(&b, "\n## Reproduction plan\n\n%s\n", strings.TrimSpace(p.Plan))
	b.WriteString("\n## What needs verification\n\n")
	for _, v := range p.Verification {
		fmt.Fprintf(&b, "- [ ] %s\n", oneLine(v))
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// promote returns the actions that move issue i into the backlog: the
// enriched body when a section is missing, ending in origin (the origin
// marker of the enrichment), blocked and tech-debt off, backlog on (spec
// 30 §4.6, §13.12).
func promote(i forge.Issue, p Proposal, origin string) Manifest {
	var m Manifest
	if len(missingSections(i.Body)) > 0 {
		m = append(m, Action{Action: EditBody, Issue: i.Number, Body: enrich(i.Body, p) + origin + "\n", BaseSHA256: BodyHash(i.Body)})
	}
	if i.HasLabel(forge.LabelBlocked) {
		m = append(m, Action{Action: RemoveLabel, Issue: i.Number, Label: string(forge.LabelBlocked)})
	}
	m = append(m, Action{Action: AddLabel, Issue: i.Number, Label: string(forge.LabelBacklog)})
	if i.HasLabel(forge.LabelTechDebt) {
		m = append(m, Action{Action: RemoveLabel, Issue: i.Number, Label: string(forge.LabelTechDebt)})
	}
	return m
}
