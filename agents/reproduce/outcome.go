package reproduce

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Verdict is the answer of a run, the outcome field of its JSON object.
type Verdict string

// The verdicts; which ones a mode may give is allowedVerdicts.
const (
	Reproduced      Verdict = "reproduced"
	CannotReproduce Verdict = "cannot-reproduce"
	NeedsTriage     Verdict = "needs-triage"
	VerifiedFixed   Verdict = "verified-fixed"
	StillReproduces Verdict = "still-reproduces"
)

// allowedVerdicts are the verdicts each mode may give.
var allowedVerdicts = map[Mode][]Verdict{
	ModeReproduce: {Reproduced, CannotReproduce, NeedsTriage},
	ModeTriage:    {Reproduced, NeedsTriage},
	ModeVerify:    {VerifiedFixed, StillReproduces},
}

// Outcome is the JSON object a session ends its answer with. Nothing else
// of what the session says is acted on.
type Outcome struct {
	Outcome Verdict `json:"outcome"`
	// RootCause is the cause, when it is obvious (reproduce) or found
	// (triage: one line per cause).
	RootCause string `json:"root_cause,omitempty"`
	// Findings is the report for the maintainers, in Markdown.
	Findings string `json:"findings"`
	// Screenshots name the screenshot files the session took, in order.
	Screenshots []string `json:"screenshots,omitempty"`
	// Causes are the root causes of a conclusive triage, one fix issue
	// each.
	Causes []Cause `json:"causes,omitempty"`
}

// Cause is one root cause found by triage.
type Cause struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	// AffectedFiles are the files the fix will touch.
	AffectedFiles []string `json:"affected_files,omitempty"`
}

// Bounds of an outcome.
const (
	maxFindings  = 32 << 10
	maxRootCause = 4 << 10
	maxCauses    = 5
	maxCauseBody = 16 << 10
	maxShots     = 10
)

// ErrOutcome marks a session answer that is not a valid outcome.
var ErrOutcome = errors.New("invalid outcome")

// screenshotRe is what a screenshot file name may look like.
var screenshotRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.png$`)

// parseOutcome reads the outcome object from the session's final answer:
// the last fenced json block, or else the text from its first '{' to its
// last '}'. Unknown fields, trailing data and every out-of-bounds value
// are errors wrapping ErrOutcome.
func parseOutcome(mode Mode, answer string) (Outcome, error) {
	raw := jsonPart(answer)
	if raw == "" {
		return Outcome{}, fmt.Errorf("%w: the answer holds no JSON object", ErrOutcome)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var o Outcome
	if err := dec.Decode(&o); err != nil {
		return Outcome{}, fmt.Errorf("%w: %v", ErrOutcome, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Outcome{}, fmt.Errorf("%w: data after the object", ErrOutcome)
	}
	return o, o.validate(mode)
}

// validate checks o field by field for mode.
func (o Outcome) validate(mode Mode) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrOutcome, field, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(allowedVerdicts[mode], o.Outcome) {
		return bad("outcome", "%q, want one of %v in mode %s", o.Outcome, allowedVerdicts[mode], mode)
	}
	if strings.TrimSpace(o.Findings) == "" {
		return bad("findings", "empty")
	}
	if len(o.Findings) > maxFindings {
		return bad("findings", "%d bytes, more than %d", len(o.Findings), maxFindings)
	}
	if len(o.RootCause) > maxRootCause {
		return bad("root_cause", "%d bytes, more than %d", len(o.RootCause), maxRootCause)
	}
	if len(o.Screenshots) > maxShots {
		return bad("screenshots", "%d, more than %d", len(o.Screenshots), maxShots)
	}
	for _, s := range o.Screenshots {
		if !screenshotRe.MatchString(s) {
			return bad("screenshots", "%q is not a plain .png file name", s)
		}
	}
	if mode != ModeTriage && len(o.Causes) > 0 {
		return bad("causes", "only triage files causes")
	}
	if len(o.Causes) > maxCauses {
		return bad("causes", "%d, more than %d", len(o.Causes), maxCauses)
	}
	for i, c := range o.Causes {
		if strings.TrimSpace(c.Title) == "" || strings.TrimSpace(c.Body) == "" {
			return bad(fmt.Sprintf("causes[%d]", i), "title and body are required")
		}
		if len(c.Body) > maxCauseBody || len(c.Title) > 300 {
			return bad(fmt.Sprintf("causes[%d]", i), "too long")
		}
	}
	if mode == ModeTriage && o.Outcome == Reproduced && len(o.Causes) == 0 {
		return bad("causes", "a conclusive triage names at least one cause")
	}
	return nil
}

// jsonPart is the JSON object of answer (see parseOutcome).
func jsonPart(answer string) string {
	if body, ok := lastFence(answer); ok {
		return strings.TrimSpace(body)
	}
	start, end := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}')
	if start < 0 || end < start {
		return ""
	}
	return answer[start : end+1]
}

// lastFence is the body of the last ```json fenced block of s.
func lastFence(s string) (string, bool) {
	var body strings.Builder
	in, found := false, ""
	ok := false
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !in && (line == "```json" || line == "```JSON"):
			in = true
			body.Reset()
		case in && line == "```":
			in, found, ok = false, body.String(), true
		case in:
			body.WriteString(sc.Text())
			body.WriteByte('\n')
		}
	}
	return found, ok
}

// resultEvent is the part of the CLI's stream-json result event read here.
type resultEvent struct {
	Type      string  `json:"type"`
	Subtype   string  `json:"subtype"`
	IsError   bool    `json:"is_error"`
	Result    string  `json:"result"`
	SessionID string  `json:"session_id"`
	NumTurns  int     `json:"num_turns"`
	CostUSD   float64 `json:"total_cost_usd"`
}

// lastResult is the last result event in a session's stream-json log.
func lastResult(log string) (resultEvent, bool) {
	var last resultEvent
	found := false
	for line := range strings.SplitSeq(log, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"type":"result"`) {
			continue
		}
		var ev resultEvent
		if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Type == "result" {
			last, found = ev, true
		}
	}
	return last, found
}
