package cilog

import (
	"fmt"
	"regexp"
	"strings"
)

// Verdict is the classification of one CI failure.
type Verdict struct {
	// Infra is true when the failure is the infrastructure's, not the
	// code's: CI is re-run once for free instead of waking the model.
	Infra bool
	// Reason names the evidence, e.g. "exit code 137 (killed, out of
	// memory)"; empty when the failure is the code's.
	Reason string
}

// Evidence is what a failure is classified from.
type Evidence struct {
	// Status is the text of the failing commit statuses (context, state,
	// description).
	Status string
	// Log is the failing job's log, or its tail.
	Log string
	// Steps are the failed steps, when the CI system reports them.
	Steps []Step
}

// infraRule is one known sign of an infrastructure failure.
type infraRule struct {
	reason string
	re     *regexp.Regexp
	// strong rules win over signs of a code failure in the same log: a
	// runner that ran out of disk or memory, or was lost, says nothing of
	// the code, whatever the log printed before.
	strong bool
}

// infraRules are the known runner and network failures. Every pattern is
// anchored on words, so "room" is not "oom" and a test named
// TestKilledWorker is not a killed job.
var infraRules = []infraRule{
	{"killed, out of memory", regexp.MustCompile(`(?i)\b(exit(ed)? (with )?(code|status) 137|oom[- ]?killed|out of memory|cannot allocate memory)\b`), true},
	{"no space left on device", regexp.MustCompile(`(?i)\bno space left on device\b|\bdisk quota exceeded\b`), true},
	{"runner lost", regexp.MustCompile(`(?i)\b(runner|agent) (was )?(lost|offline|disconnected|went away)\b|\blost contact with (the )?(runner|agent)\b|\bjob (was )?(cancelled|canceled) because (the )?runner\b`), true},
	{"image pull failed", regexp.MustCompile(`(?i)\b(error|failed|failure) (while )?(pulling|to pull|pull(ing)?) (the )?image\b|\bdocker pull\b.*\b(timeout|timed out|toomanyrequests)\b|\btoomanyrequests\b|\berror response from daemon:.*\b(timeout|i/o timeout|TLS handshake)\b`), true},
	{"network failure", regexp.MustCompile(`(?i)\bfailed to connect to\b|\bconnection timed out\b|\bconnection reset by peer\b|\btls handshake timeout\b|\bi/o timeout\b|\btemporary failure in name resolution\b|\bcould not resolve host\b|\bnetwork is unreachable\b`), false},
	{"infrastructure", regexp.MustCompile(`(?i)\binfrastructure (failure|error|problem)\b`), false},
}

// codeRe recognises the output of a compiler, linter or test runner that
// found a fault in the code. When it matches, only a strong infra sign can
// make the failure the infrastructure's: a test that failed on a refused
// or timed-out connection of its own is the code's to fix.
var codeRe = regexp.MustCompile(`(?m)` +
	`^\S+\.\w+:\d+(:\d+)?: |` + // file.go:12:3: undefined: x (gcc, go, tsc, eslint -f unix)
	`^\s*--- FAIL: |^FAIL\s|` + // go test
	`\berror\[E\d+\]: |^error: could not compile\b|` + // rustc, cargo
	`\b(Syntax|Type|Reference|Assertion|Name|Attribute|Import)Error\b|` +
	`\bTraceback \(most recent call last\)|` +
	`\b\d+ (failed|failing)\b|\btests? failed\b`)

// cloneRe names a step that clones the repository.
var cloneRe = regexp.MustCompile(`(?i)clone|^git`)

// Classify decides whether a CI failure is the infrastructure's (spec 10
// §5.4): a step killed with exit code 137, a clone step that exited 128,
// or a log or status text with a known runner, disk, image-pull or network
// error. Signs of a code failure in the log (compiler diagnostics, failed
// tests) overrule the weak signs (network errors and timeouts), never the
// strong ones (out of memory, disk full, runner lost, image pull). The
// verdict is the code's when nothing matches.
func Classify(ev Evidence) Verdict {
	for _, s := range ev.Steps {
		switch {
		case s.ExitCode == 137:
			return Verdict{Infra: true, Reason: fmt.Sprintf("step %s: exit code 137 (killed, out of memory)", s.Name)}
		case s.ExitCode == 128 && cloneRe.MatchString(s.Name):
			return Verdict{Infra: true, Reason: fmt.Sprintf("step %s: exit code 128 (clone failed)", s.Name)}
		}
	}
	code := codeRe.MatchString(ev.Log)
	text := ev.Status + "\n" + ev.Log
	for _, r := range infraRules {
		if code && !r.strong {
			continue
		}
		if m := r.re.FindString(text); m != "" {
			return Verdict{Infra: true, Reason: r.reason + ": " + strings.TrimSpace(m)}
		}
	}
	return Verdict{}
}
