package claudetest_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

func post(t *testing.T, url, path string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func request(stream bool, system string, msgs ...map[string]any) map[string]any {
	return map[string]any{"model": "m", "stream": stream, "system": []any{map[string]any{"type": "text", "text": system}}, "messages": msgs}
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func TestServerAnswersByMarkerAndPosition(t *testing.T) {
	t.Parallel()
	srv, url := claudetest.Start(t,
		claudetest.Scenario{Name: "a", Default: true, Turns: []claudetest.Turn{claudetest.Text("from a")}},
		claudetest.Scenario{Name: "b", Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash("ls {{.Cwd}}")),
			claudetest.Text("b done"),
		}},
		claudetest.Scenario{Name: "busy", Marker: "ISSUE-7", Turns: []claudetest.Turn{{Status: 529}}},
	)
	tests := []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantJSON   string // substring of a non-streaming body
	}{
		{name: "default scenario", body: request(false, "sys", user("hi")), wantStatus: 200, wantJSON: `"text":"from a"`},
		{
			name: "marker selects b, tool use templated", body: request(false, "Primary working directory: /w/x", user("scenario: b")),
			wantStatus: 200, wantJSON: `"command":"ls /w/x"`,
		},
		{
			name: "second turn after tool result",
			body: request(false, "", user("scenario: b"),
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "out"}}}),
			wantStatus: 200, wantJSON: `"text":"b done"`,
		},
		{name: "scripted API error", body: request(false, "", user("fix ISSUE-7")), wantStatus: 529, wantJSON: `overloaded_error`},
	}
	for _, tc := range tests {
		resp := post(t, url, "/v1/messages", tc.body)
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		if resp.StatusCode != tc.wantStatus || !strings.Contains(b.String(), tc.wantJSON) {
			t.Errorf("%s: status %d body %s; want %d with %s", tc.name, resp.StatusCode, b.String(), tc.wantStatus, tc.wantJSON)
		}
	}
	if reqs := srv.MessageRequests("b"); len(reqs) != 2 || reqs[1].Turn != 1 || reqs[1].ToolResults[0] != "out" {
		t.Errorf("recorded b requests: %+v", reqs)
	}
}

func TestServerStreamsSSE(t *testing.T) {
	t.Parallel()
	_, url := claudetest.Start(t, claudetest.Scenario{Name: "s", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Block{Text: "let me look"}, claudetest.Write("/tmp/f", "x")),
	}})
	resp := post(t, url, "/v1/messages", request(true, "", user("go")))
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}

func TestServerOtherEndpoints(t *testing.T) {
	t.Parallel()
	srv, url := claudetest.Start(t, claudetest.Scenario{Name: "s", Turns: []claudetest.Turn{claudetest.Text("x")}})
	resp := post(t, url, "/v1/messages/count_tokens", request(false, "", user("count me")))
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || resp.StatusCode != 200 || ct.InputTokens == 0 {
		t.Errorf("count_tokens: %d %+v %v", resp.StatusCode, ct, err)
	}
	if resp := post(t, url, "/v1/unknown", map[string]any{}); resp.StatusCode != 404 {
		t.Errorf("unknown endpoint: %d", resp.StatusCode)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests recorded, want 2", n)
	}
}

func TestLoadScenarios(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("one.json", `{"name":"one","turns":[{"blocks":[{"tool":"Bash","input":{"command":"true"}}]}]}`)
	write("many.json", `[{"name":"two","turns":[{"blocks":[{"text":"hi"}]}]},{"name":"three","turns":[]}]`)
	got, err := claudetest.LoadScenarios(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "two" || got[2].Name != "one" || got[2].Turns[0].Blocks[0].Tool != "Bash" {
		t.Errorf("loaded %+v", got)
	}
	write("bad.json", `{"name":"bad","turns":[{"blocks":[{"type":"tool_use"}]}]}`)
	if _, err := claudetest.LoadScenarios(dir); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad scenario: err = %v", err)
	}
	// The shipped example scenarios of the standalone server load.
	if _, err := claudetest.LoadScenarios("../../../tests/modelserver/testdata"); err != nil {
		t.Errorf("tests/modelserver/testdata: %v", err)
	}
}
