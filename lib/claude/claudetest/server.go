package claudetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/template"
)

// Request is one recorded request to the model server.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Body is the decoded JSON body (nil when not JSON).
	Body map[string]any
	// Scenario and Turn say how a /v1/messages request was answered.
	Scenario string
	Turn     int
	// Stream reports an SSE request.
	Stream bool
	// Texts holds every text of the request's user messages, in order.
	Texts []string
	// ToolResults holds the text of every tool_result in the request.
	ToolResults []string
}

// Server is a scripted Anthropic Messages API. It is an http.Handler; in
// tests use Start. It is safe for concurrent use.
type Server struct {
	mu        sync.Mutex
	scenarios []Scenario
	requests  []Request
	nextID    int
	// Logf, when set, receives one line per request (unknown endpoints
	// included).
	Logf func(format string, args ...any)
}

// NewServer returns a server answering with the given scenarios.
func NewServer(scenarios ...Scenario) (*Server, error) {
	for _, s := range scenarios {
		if err := s.Validate(); err != nil {
			return nil, err
		}
	}
	return &Server{scenarios: scenarios}, nil
}

// Start serves scenarios on a local port for the duration of the test and
// returns the server and its base URL (for ANTHROPIC_BASE_URL).
func Start(t testing.TB, scenarios ...Scenario) (*Server, string) {
	t.Helper()
	s, err := NewServer(scenarios...)
	if err != nil {
		t.Fatalf("model server: %v", err)
	}
	s.Logf = t.Logf
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// SetScenarios replaces the scenarios, for a test whose script depends on
// what exists only after the server started (paths, process ids).
func (s *Server) SetScenarios(scenarios ...Scenario) error {
	for _, sc := range scenarios {
		if err := sc.Validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenarios = scenarios
	return nil
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// MessageRequests returns the /v1/messages requests answered with
// scenario name (all of them when name is empty).
func (s *Server) MessageRequests(name string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasPrefix(r.Path, "/v1/messages") && !strings.Contains(r.Path, "count_tokens") &&
			(name == "" || r.Scenario == name) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	_ = json.Unmarshal(raw, &rec.Body)

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.record(rec)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(raw) / 4})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, rec)
	default:
		s.record(rec)
		s.logf("model server: unhandled %s %s", r.Method, r.URL.Path)
		writeJSON(w, http.StatusNotFound, apiError("not_found_error", "not found: "+r.URL.Path))
	}
}

func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

var cwdRe = regexp.MustCompile(`Primary working directory: (\S+)`)

func (s *Server) messages(w http.ResponseWriter, rec Request) {
	var system strings.Builder
	collectText(rec.Body["system"], &system)
	assistants := 0
	msgs, _ := rec.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch mm["role"] {
		case "assistant":
			assistants++
		case "user":
			texts, results := userContent(mm["content"])
			rec.Texts = append(rec.Texts, texts...)
			rec.ToolResults = append(rec.ToolResults, results...)
		default:
			collectText(mm["content"], &system)
		}
	}
	rec.Stream, _ = rec.Body["stream"].(bool)
	rec.Turn = assistants
	haystack := system.String() + "\n" + strings.Join(rec.Texts, "\n")
	sc, ok := s.pick(haystack)
	if !ok {
		s.record(rec)
		s.logf("model server: no scenario matches request (turn %d)", rec.Turn)
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", "no scenario matches this request"))
		return
	}
	rec.Scenario = sc.Name
	s.record(rec)
	s.logf("model server: scenario %s turn %d stream=%v", sc.Name, rec.Turn, rec.Stream)

	turn := Text("done")
	if rec.Turn < len(sc.Turns) {
		turn = sc.Turns[rec.Turn]
	}
	if turn.Status != 0 {
		writeJSON(w, turn.Status, apiError(errorType(turn.Status), "scripted error"))
		return
	}
	m := match(cwdRe.FindStringSubmatch(system.String()))
	data := TemplateData{Cwd: m, Scenario: sc.Name, Turn: rec.Turn}
	content, stop, err := s.render(turn, data)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apiError("api_error", err.Error()))
		return
	}
	model, _ := rec.Body["model"].(string)
	in, out := orDefault(sc.InputTokens, 10), orDefault(sc.OutputTokens, 5)
	if rec.Stream {
		writeSSE(w, s.newID("msg"), model, content, stop, in, out)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.newID("msg"), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out},
	})
}

func match(m []string) string {
	if len(m) > 1 {
		return m[1]
	}
	return ""
}

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// pick returns the scenario whose marker occurs in text, else the default.
func (s *Server) pick(text string) (Scenario, bool) {
	var def *Scenario
	for i, sc := range s.scenarios {
		if strings.Contains(text, sc.marker()) {
			return sc, true
		}
		if sc.Default && def == nil {
			def = &s.scenarios[i]
		}
	}
	if def == nil && len(s.scenarios) == 1 {
		def = &s.scenarios[0]
	}
	if def == nil {
		return Scenario{}, false
	}
	return *def, true
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s_%06d", prefix, s.nextID)
}

// render turns a scripted turn into API content blocks.
func (s *Server) render(t Turn, data TemplateData) ([]map[string]any, string, error) {
	stop := "end_turn"
	var out []map[string]any
	for _, b := range t.Blocks {
		if b.kind() == "text" {
			out = append(out, map[string]any{"type": "text", "text": b.Text})
			continue
		}
		input := make(map[string]any, len(b.Input))
		for k, v := range b.Input {
			if str, ok := v.(string); ok && strings.Contains(str, "{{") {
				rendered, err := expand(str, data)
				if err != nil {
					return nil, "", err
				}
				v = rendered
			}
			input[k] = v
		}
		out = append(out, map[string]any{"type": "tool_use", "id": s.newID("toolu"), "name": b.Tool, "input": input})
		stop = "tool_use"
	}
	return out, stop, nil
}

func expand(text string, data TemplateData) (string, error) {
	tmpl, err := template.New("input").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("tool input template: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("tool input template: %w", err)
	}
	return b.String(), nil
}

// collectText appends every "text" found in a content value (string or
// block list) to b.
func collectText(v any, b *strings.Builder) {
	switch c := v.(type) {
	case string:
		b.WriteString(c)
		b.WriteByte('\n')
	case []any:
		for _, x := range c {
			if m, ok := x.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
					b.WriteByte('\n')
				}
			}
		}
	}
}

func userContent(v any) (texts, results []string) {
	switch c := v.(type) {
	case string:
		return []string{c}, nil
	case []any:
		for _, x := range c {
			m, _ := x.(map[string]any)
			switch m["type"] {
			case "text":
				if t, ok := m["text"].(string); ok {
					texts = append(texts, t)
				}
			case "tool_result":
				var b strings.Builder
				collectText(m["content"], &b)
				results = append(results, strings.TrimSpace(b.String()))
			}
		}
	}
	return texts, results
}

// errorType is the Messages API's error type for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusBadRequest:
		return "invalid_request_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func apiError(kind, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
