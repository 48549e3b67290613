package cilog_test

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/cilog"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		ev     cilog.Evidence
		infra  bool
		reason string // a substring of the reason
	}{
		// Infrastructure.
		{"step killed with 137", cilog.Evidence{Steps: []cilog.Step{{Name: "test", ExitCode: 137}}}, true, "exit code 137"},
		{"clone exit 128", cilog.Evidence{Steps: []cilog.Step{{Name: "clone", ExitCode: 128}}}, true, "clone failed"},
		{"git step exit 128", cilog.Evidence{Steps: []cilog.Step{{Name: "git-fetch", ExitCode: 128}}}, true, "clone failed"},
		{"exit code 137 in the log", cilog.Evidence{Log: "running tests\nProcess exited with code 137\n"}, true, "out of memory"},
		{"OOMKilled", cilog.Evidence{Log: "container state: OOMKilled"}, true, "out of memory"},
		{"out of memory next to a test failure", cilog.Evidence{Log: "--- FAIL: TestBig\nfatal error: runtime: out of memory\n"}, true, "out of memory"},
		{"disk full", cilog.Evidence{Log: "write /tmp/go-build123/b001/a.out: no space left on device\n"}, true, "no space left on device"},
		{"disk full beats a compiler line", cilog.Evidence{Log: "main.go:3:1: cannot write: no space left on device\n"}, true, "no space"},
		{"network in status text", cilog.Evidence{Status: "- ci/test: failure: clone: failed to connect to forge"}, true, "network"},
		{"TLS timeout", cilog.Evidence{Log: "Get \"https://proxy.golang.org/x/@v/list\": net/http: TLS handshake timeout"}, true, "network"},
		{"dial i/o timeout", cilog.Evidence{Log: "go: downloading x: dial tcp 10.0.0.1:443: i/o timeout"}, true, "network"},
		{"DNS", cilog.Evidence{Log: "fatal: unable to access 'https://forge/x.git/': Could not resolve host: forge"}, true, "network"},
		{"docker pull timeout", cilog.Evidence{Log: "docker pull golang:1.26: net/http: request canceled (Client.Timeout exceeded) timeout"}, true, "image pull"},
		{"image pull failed", cilog.Evidence{Log: "Error pulling image golang:1.26: manifest unknown"}, true, "image pull"},
		{"rate limited pull", cilog.Evidence{Log: "toomanyrequests: You have reached your pull rate limit"}, true, "image pull"},
		{"runner lost", cilog.Evidence{Status: "- ci/test: error: runner lost"}, true, "runner lost"},
		{"agent disconnected", cilog.Evidence{Log: "the agent disconnected while running step test"}, true, "runner lost"},

		// The code's.
		{"go compiler error", cilog.Evidence{Log: "# example.com/w\n./widget.go:12:2: undefined: frobnicate\n"}, false, ""},
		{"go test failure", cilog.Evidence{Log: "--- FAIL: TestWidget (0.00s)\n    widget_test.go:9: got 1, want 2\nFAIL\texample.com/w\t0.01s\n"}, false, ""},
		{"test failing on a refused connection", cilog.Evidence{Log: "--- FAIL: TestServer\n    dial tcp 127.0.0.1:8080: connect: connection refused\n"}, false, ""},
		{"test failing on its own timeout", cilog.Evidence{Log: "--- FAIL: TestClient\n    client_test.go:40: i/o timeout\n"}, false, ""},
		{"rust error", cilog.Evidence{Log: "error[E0425]: cannot find value `x` in this scope\n  --> src/main.rs:2:5\n"}, false, ""},
		{"python test", cilog.Evidence{Log: "E   AssertionError: assert 1 == 2\n===== 1 failed, 3 passed in 0.1s =====\n"}, false, ""},
		{"exit code 1", cilog.Evidence{Steps: []cilog.Step{{Name: "test", ExitCode: 1}}, Log: "exit status 1"}, false, ""},
		{"clone exit 1 is not 128", cilog.Evidence{Steps: []cilog.Step{{Name: "clone", ExitCode: 1}}}, false, ""},
		{"128 outside a clone step", cilog.Evidence{Steps: []cilog.Step{{Name: "build", ExitCode: 128}}}, false, ""},
		{"words that merely contain oom", cilog.Evidence{Log: "room for zoom: TestBloom failed", Status: "- ci/test: failure: killed the mutant"}, false, ""},
		{"test named after the runner", cilog.Evidence{Log: "--- FAIL: TestRunnerLostRecovery\n"}, false, ""},
		{"plain status", cilog.Evidence{Status: "- ci/test: failure: TestWidget failed"}, false, ""},
		{"nothing", cilog.Evidence{}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := cilog.Classify(tc.ev)
			if v.Infra != tc.infra {
				t.Fatalf("Classify = %+v, want infra %v", v, tc.infra)
			}
			if tc.infra && !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("reason %q, want it to mention %q", v.Reason, tc.reason)
			}
			if !tc.infra && v.Reason != "" {
				t.Fatalf("code failure with a reason %q", v.Reason)
			}
		})
	}
}
