// Package claudetest holds the test doubles of lib/claude: a scripted model
// server that speaks the Anthropic Messages API (so the real claude CLI can
// be tested end to end), fault-injecting fake claude binaries, a scripted
// in-process Runner, and helpers that locate the pinned real CLI.
//
// It is imported from tests only (and from the standalone model server
// under tests/modelserver).
package claudetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Block is one content block of a scripted model turn.
type Block struct {
	// Type is "text" or "tool_use"; empty is inferred from the fields.
	Type string `json:"type,omitempty"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// Tool is the tool name of a tool_use block (Bash, Write, Edit, ...).
	Tool string `json:"tool,omitempty"`
	// Input is the tool input. String values may use text/template
	// placeholders filled from the request (see TemplateData).
	Input map[string]any `json:"input,omitempty"`
}

// Turn is one scripted model response.
type Turn struct {
	Blocks []Block `json:"blocks"`
	// Status, when non-zero, answers with this HTTP status and an API
	// error instead of a message (e.g. 529 overloaded).
	Status int `json:"status,omitempty"`
}

// Scenario is a scripted conversation. The model answers the N-th request
// of a conversation (N = number of assistant messages already in the
// request) with Turns[N]; past the end it ends the turn with "done".
// Because the position comes from the request itself, a resumed
// conversation continues where it stopped and one server serves many
// concurrent sessions.
type Scenario struct {
	// Name identifies the scenario in recorded requests.
	Name string `json:"name"`
	// Marker selects the scenario when found in the request's user or
	// system text; default "scenario: <Name>".
	Marker string `json:"marker,omitempty"`
	// Default makes the scenario answer requests that match no marker.
	Default bool `json:"default,omitempty"`
	// Turns are the scripted responses in order.
	Turns []Turn `json:"turns"`
	// InputTokens and OutputTokens are reported per response (default 10
	// and 5).
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// TemplateData is what tool inputs can refer to, e.g. {{.Cwd}}.
type TemplateData struct {
	// Cwd is the session's working directory, read from the system prompt.
	Cwd string
	// Scenario is the scenario name.
	Scenario string
	// Turn is the index of the turn being answered.
	Turn int
}

// Text returns a turn that answers with text and ends the model's turn.
func Text(s string) Turn { return Turn{Blocks: []Block{{Type: "text", Text: s}}} }

// Tools returns a turn that calls the given tools (and may include text).
func Tools(blocks ...Block) Turn { return Turn{Blocks: blocks} }

// Bash is a Bash tool_use block.
func Bash(command string) Block {
	return Block{Type: "tool_use", Tool: "Bash", Input: map[string]any{"command": command, "description": "Run a scripted command"}}
}

// Write is a Write tool_use block.
func Write(path, content string) Block {
	return Block{Type: "tool_use", Tool: "Write", Input: map[string]any{"file_path": path, "content": content}}
}

// Edit is an Edit tool_use block.
func Edit(path, oldText, newText string) Block {
	return Block{Type: "tool_use", Tool: "Edit", Input: map[string]any{"file_path": path, "old_string": oldText, "new_string": newText}}
}

func (b Block) kind() string {
	if b.Type != "" {
		return b.Type
	}
	if b.Tool != "" {
		return "tool_use"
	}
	return "text"
}

// marker returns the selection marker of s.
func (s Scenario) marker() string {
	if s.Marker != "" {
		return s.Marker
	}
	return "scenario: " + s.Name
}

// Validate reports the first problem of s.
func (s Scenario) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("scenario without a name")
	}
	for i, t := range s.Turns {
		if t.Status != 0 {
			continue
		}
		if len(t.Blocks) == 0 {
			return fmt.Errorf("scenario %s: turn %d has no blocks", s.Name, i)
		}
		for j, b := range t.Blocks {
			switch b.kind() {
			case "text":
			case "tool_use":
				if b.Tool == "" {
					return fmt.Errorf("scenario %s: turn %d block %d: tool_use without tool", s.Name, i, j)
				}
			default:
				return fmt.Errorf("scenario %s: turn %d block %d: unknown type %q", s.Name, i, j, b.Type)
			}
		}
	}
	return nil
}

// LoadScenarios reads every *.json file of dir; each holds one scenario
// object or an array of them.
func LoadScenarios(dir string) ([]Scenario, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	sort.Strings(files)
	var out []Scenario
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read scenario: %w", err)
		}
		var list []Scenario
		if strings.HasPrefix(strings.TrimSpace(string(data)), "[") {
			err = json.Unmarshal(data, &list)
		} else {
			var one Scenario
			err = json.Unmarshal(data, &one)
			list = []Scenario{one}
		}
		if err != nil {
			return nil, fmt.Errorf("parse scenario %s: %w", f, err)
		}
		for _, s := range list {
			if err := s.Validate(); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
		out = append(out, list...)
	}
	return out, nil
}
