package verdict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/disinto/disinto/lib/atomicfile"
)

// Severity of a finding.
type Severity string

// Severities, most severe first.
const (
	Critical Severity = "critical"
	High     Severity = "high"
	Medium   Severity = "medium"
	Low      Severity = "low"
	Info     Severity = "info"
)

var severityRank = map[Severity]int{Critical: 4, High: 3, Medium: 2, Low: 1, Info: 0}

// AtLeast reports whether s is as severe as min. Unknown severities rank
// below info.
func (s Severity) AtLeast(min Severity) bool {
	r, ok := severityRank[Severity(strings.ToLower(string(s)))]
	return ok && r >= severityRank[min]
}

// Finding is one problem the review found.
type Finding struct {
	Severity    Severity `json:"severity"`
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Text        string   `json:"text"`
	Preexisting bool     `json:"preexisting"`
}

// Output is the review file the model writes ($DISINTO_REVIEW_FILE).
type Output struct {
	Verdict        Verdict   `json:"verdict"`
	VerdictReason  string    `json:"verdict_reason"`
	ReviewMarkdown string    `json:"review_markdown"`
	Findings       []Finding `json:"findings"`
}

// ErrNoOutput means the model wrote no review file.
var ErrNoOutput = errors.New("no review output")

// maxOutputBytes bounds what is read from a model-written file.
const maxOutputBytes = 1 << 20

// ReadOutput reads and validates the review file at path.
func ReadOutput(path string) (Output, error) {
	data, _, err := atomicfile.ReadUntrusted(path, maxOutputBytes)
	if errors.Is(err, os.ErrNotExist) {
		return Output{}, fmt.Errorf("%s: %w", path, ErrNoOutput)
	}
	if err != nil {
		return Output{}, fmt.Errorf("review output: %w", err)
	}
	return ParseOutput(data)
}

// ParseOutput decodes a review output: a JSON object, or (as models
// sometimes write) prose around one fenced ```json block. The verdict must
// be one of the three; unknown fields are ignored.
func ParseOutput(data []byte) (Output, error) {
	var raw struct {
		Verdict        *string   `json:"verdict"`
		VerdictReason  string    `json:"verdict_reason"`
		ReviewMarkdown string    `json:"review_markdown"`
		Findings       []Finding `json:"findings"`
	}
	candidate := bytes.TrimSpace(data)
	if err := json.Unmarshal(candidate, &raw); err != nil || raw.Verdict == nil {
		block, ok := fencedJSON(string(data))
		if !ok {
			return Output{}, fmt.Errorf("review output is not a JSON object with a verdict")
		}
		raw.Verdict = nil
		if err := json.Unmarshal([]byte(block), &raw); err != nil || raw.Verdict == nil {
			return Output{}, fmt.Errorf("review output is not a JSON object with a verdict")
		}
	}
	v, err := Parse(*raw.Verdict)
	if err != nil {
		return Output{}, err
	}
	return Output{Verdict: v, VerdictReason: strings.TrimSpace(raw.VerdictReason), ReviewMarkdown: raw.ReviewMarkdown, Findings: raw.Findings}, nil
}

// fencedJSON returns the body of the first ```json fenced block.
func fencedJSON(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "```json" {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == "```" {
				return strings.Join(lines[i+1:j], "\n"), true
			}
		}
	}
	return "", false
}
