package predictor

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ProposalsFile is the session's outbox: the predictions it proposes, as
// JSON. Nothing else the session writes reaches the tracker.
const ProposalsFile = "proposals.json"

// EnvProposals names the outbox for the session.
const EnvProposals = "DISINTO_PREDICTOR_PROPOSALS"

// Kind is what a proposal asks for.
type Kind string

// The kinds of proposal (spec 40 §3.4).
const (
	// Explore files a prediction for the planner to triage.
	Explore Kind = "explore"
	// Exploit files a prediction and a vault request to run a formula
	// that produces evidence for or against it.
	Exploit Kind = "exploit"
)

// Budget is the action points of one run; an explore costs 1 and an
// exploit 2 (spec 40 §3.6).
const Budget = 5

// Cost returns the action points of a proposal of kind k.
func (k Kind) Cost() int {
	if k == Exploit {
		return 2
	}
	return 1
}

// Proposal is one prediction the session proposes. Formula and Focus
// belong to exploits; Dismissed and NewEvidence re-file a theory the
// planner dismissed; Supersedes names an open prediction of the predictor
// that this one replaces.
type Proposal struct {
	Kind            Kind   `json:"kind"`
	Title           string `json:"title"`
	Observation     string `json:"observation"`
	Theory          string `json:"theory"`
	Confidence      string `json:"confidence"`
	EvidenceChecked string `json:"evidence_checked"`
	SuggestedAction string `json:"suggested_action"`
	Formula         string `json:"formula,omitempty"`
	Focus           string `json:"focus,omitempty"`
	Supersedes      int64  `json:"supersedes,omitempty"`
	Dismissed       int64  `json:"dismissed,omitempty"`
	NewEvidence     string `json:"new_evidence,omitempty"`
}

// Proposals is the outbox's content.
type Proposals struct {
	Proposals []Proposal `json:"proposals"`
	// Skipped says why nothing was proposed, when nothing was.
	Skipped string `json:"skipped,omitempty"`
}

// ErrProposal wraps every reason a proposal is refused.
var ErrProposal = errors.New("invalid proposal")

// Bounds of the proposal texts.
const (
	maxTitle     = 200
	maxText      = 4 << 10
	maxProposals = 32
)

// formulaRe is the form of a formula name.
var formulaRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ParseProposals decodes the outbox strictly. A file that is not the
// schema is refused whole; a proposal that breaks a rule is refused
// alone, and the reason returned with its position.
func ParseProposals(data []byte) (Proposals, []error, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var p Proposals
	if err := dec.Decode(&p); err != nil {
		return Proposals{}, nil, fmt.Errorf("%s: %w: %w", ProposalsFile, ErrProposal, err)
	}
	if len(p.Proposals) > maxProposals {
		return Proposals{}, nil, fmt.Errorf("%s: %w: %d proposals, at most %d", ProposalsFile, ErrProposal, len(p.Proposals), maxProposals)
	}
	var ok []Proposal
	var refused []error
	for i, pr := range p.Proposals {
		if err := pr.Validate(); err != nil {
			refused = append(refused, fmt.Errorf("%s: proposal %d: %w: %w", ProposalsFile, i+1, ErrProposal, err))
			continue
		}
		ok = append(ok, pr.trimmed())
	}
	p.Proposals = ok
	return p, refused, nil
}

// Validate checks one proposal against the schema and the protocol's
// rules: the kinds, the confidence each kind allows, the fields each
// needs, and texts that are bounded and carry no HTML comment.
func (p Proposal) Validate() error {
	switch p.Kind {
	case Explore:
		if c := strings.TrimSpace(p.Confidence); c != "low" && c != "medium" {
			return fmt.Errorf("confidence %q: an explore is low or medium", p.Confidence)
		}
	case Exploit:
		if c := strings.TrimSpace(p.Confidence); c != "high" && c != "medium" {
			return fmt.Errorf("confidence %q: an exploit is high (or medium)", p.Confidence)
		}
		if !formulaRe.MatchString(strings.TrimSpace(p.Formula)) {
			return fmt.Errorf("formula %q is not a formula name", p.Formula)
		}
		if strings.TrimSpace(p.Focus) == "" {
			return errors.New("an exploit needs a focus")
		}
	default:
		return fmt.Errorf("kind %q is not explore or exploit", p.Kind)
	}
	title := strings.TrimSpace(p.Title)
	if title == "" || len(title) > maxTitle || strings.ContainsAny(title, "\n\r") {
		return errors.New("the title must be one line of at most 200 bytes")
	}
	for name, s := range map[string]string{"observation": p.Observation, "theory": p.Theory,
		"evidence_checked": p.EvidenceChecked, "suggested_action": p.SuggestedAction} {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("%s is empty", name)
		}
	}
	for _, s := range []string{p.Title, p.Observation, p.Theory, p.EvidenceChecked, p.SuggestedAction, p.Focus, p.NewEvidence} {
		if len(s) > maxText {
			return errors.New("a text is longer than 4 KiB")
		}
		if strings.Contains(s, "<!--") {
			return errors.New("a text carries an HTML comment")
		}
	}
	if p.Supersedes < 0 || p.Dismissed < 0 {
		return errors.New("an issue number is negative")
	}
	if p.Dismissed > 0 && strings.TrimSpace(p.NewEvidence) == "" {
		return errors.New("re-filing a dismissed prediction needs new_evidence")
	}
	return nil
}

// trimmed returns p with its one-line fields trimmed.
func (p Proposal) trimmed() Proposal {
	p.Title = oneLine(p.Title)
	p.Confidence = strings.TrimSpace(p.Confidence)
	p.Formula = strings.TrimSpace(p.Formula)
	return p
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
