package phase_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/phase"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line    string
		want    phase.Phase
		wantErr bool
	}{
		{"PHASE:awaiting_ci", phase.AwaitingCI, false},
		{"PHASE:awaiting_review", phase.AwaitingReview, false},
		{"PHASE:escalate", phase.Escalate, false},
		{"PHASE:failed", phase.Failed, false},
		{"PHASE:done", phase.Done, false},
		{"PHASE:crashed", phase.Crashed, false},
		{"  PHASE:done \r", phase.Done, false},
		{"\ufeffPHASE:done", phase.Done, false},
		{"PHASE: Done", phase.Done, false},
		{"PHASE:merged", "", true},
		{"PHASE:", "", true},
		{"phase:done", "", true},
		{"done", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			t.Parallel()
			got, err := phase.Parse(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, wantErr %v", tt.line, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, phase.ErrInvalid) {
				t.Errorf("Parse(%q) error %v does not wrap ErrInvalid", tt.line, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestPhaseMethods(t *testing.T) {
	t.Parallel()
	terminal := map[phase.Phase]bool{phase.Escalate: true, phase.Failed: true, phase.Done: true, phase.Crashed: true}
	for _, p := range phase.All() {
		if err := p.Validate(); err != nil {
			t.Errorf("%s.Validate() = %v", p, err)
		}
		if got := p.Terminal(); got != terminal[p] {
			t.Errorf("%s.Terminal() = %v, want %v", p, got, terminal[p])
		}
		back, err := phase.Parse(p.Line())
		if err != nil || back != p {
			t.Errorf("Parse(%q) = %q, %v; want round trip", p.Line(), back, err)
		}
	}
	if err := phase.Phase("bogus").Validate(); !errors.Is(err, phase.ErrInvalid) {
		t.Errorf("Validate(bogus) = %v, want ErrInvalid", err)
	}
	if got := phase.AwaitingCI.Line(); got != "PHASE:awaiting_ci" {
		t.Errorf("Line() = %q", got)
	}
}

func TestParseContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		content    string
		want       phase.Phase
		wantReason string
		wantLine   int // 0: no ParseError expected
		wantEmpty  bool
	}{
		{"phase only", "PHASE:done\n", phase.Done, "", 0, false},
		{"no trailing newline", "PHASE:done", phase.Done, "", 0, false},
		{"with reason", "PHASE:failed\nReason: tests do not compile\n", phase.Failed, "tests do not compile", 0, false},
		{"CRLF and trailing space", "PHASE:escalate  \r\nReason: need a human \r\n\r\n", phase.Escalate, "need a human", 0, false},
		{"blank lines around", "\n\nPHASE:awaiting_ci\n\n", phase.AwaitingCI, "", 0, false},
		{"lower-case reason label", "PHASE:failed\nreason: x", phase.Failed, "x", 0, false},
		{"multi-line reason", "PHASE:failed\nReason: first\nsecond\n", phase.Failed, "first\nsecond", 0, false},
		{"empty", "", "", "", 0, true},
		{"whitespace only", " \n\r\n\t", "", "", 0, true},
		{"unknown phase", "PHASE:merged\n", "", "", 1, false},
		{"unknown phase after blank", "\nPHASE:wat", "", "", 2, false},
		{"garbage second line", "PHASE:done\nSHA: abc\n", "", "", 2, false},
		{"no prefix", "awaiting_ci", "", "", 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reason, err := phase.ParseContent([]byte(tt.content))
			switch {
			case tt.wantEmpty:
				if !errors.Is(err, phase.ErrEmpty) {
					t.Fatalf("error = %v, want ErrEmpty", err)
				}
				return
			case tt.wantLine > 0:
				var pe *phase.ParseError
				if !errors.As(err, &pe) || !errors.Is(err, phase.ErrInvalid) {
					t.Fatalf("error = %v, want a ParseError wrapping ErrInvalid", err)
				}
				if pe.Line != tt.wantLine {
					t.Errorf("ParseError.Line = %d, want %d", pe.Line, tt.wantLine)
				}
				return
			case err != nil:
				t.Fatalf("error = %v", err)
			}
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("got %q, %q; want %q, %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func FuzzParseContent(f *testing.F) {
	for _, s := range []string{
		"PHASE:done\n",
		"PHASE:failed\r\nReason: x\r\n",
		"PHASE:merged",
		"\ufeffPHASE:awaiting_ci\n\nReason:\n",
		"",
		"PHASE:done\nSHA:1",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, _, err := phase.ParseContent(data)
		if err != nil {
			if !errors.Is(err, phase.ErrInvalid) && !errors.Is(err, phase.ErrEmpty) {
				t.Fatalf("error %v wraps neither ErrInvalid nor ErrEmpty", err)
			}
			return
		}
		if verr := p.Validate(); verr != nil {
			t.Fatalf("ParseContent returned invalid phase %q", p)
		}
	})
}
