package formula_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/phase"
)

const followupBase = `name = "f"
description = "d"
version = 1

[[steps]]
id = "a"
title = "A"
description = "do a"

`

// Every rule of [followups] is checked, with the line and field it names.
func TestFollowupValidation(t *testing.T) {
	tests := []struct {
		name, src string
		want      error
		msg       string
	}{
		{"no text", "[followups.x]\ndescription = \"d\"\n", formula.ErrInvalid, "f.toml:10: followups.x.text: is required"},
		{"no description", "[followups.x]\ntext = \"t\"\n", formula.ErrInvalid, "f.toml:10: followups.x.description: is required"},
		{"undeclared", "[followups.x]\ndescription = \"d\"\ntext = \"PR {{pr}}\"\n", formula.ErrUndeclaredVar,
			"f.toml:12: followups.x.text: {{pr}} is neither in vars nor a protocol word"},
		{"unused", "[followups.x]\ndescription = \"d\"\nvars = [\"pr\"]\ntext = \"t\"\n", formula.ErrInvalid,
			`f.toml:12: followups.x.vars: "pr" is declared but the text never uses it`},
		{"protocol word as var", "[followups.x]\ndescription = \"d\"\nvars = [\"phase_done\"]\ntext = \"{{phase_done}}\"\n", formula.ErrInvalid,
			`f.toml:12: followups.x.vars: "phase_done" is a protocol word, not a variable`},
		{"bad name", "[followups.X]\ndescription = \"d\"\ntext = \"t\"\n", formula.ErrInvalid,
			"f.toml:10: followups.X: follow-up name must be lowercase letters, digits, '_' or '-'"},
		{"unknown key", "[followups.x]\ndescription = \"d\"\ntext = \"t\"\nvar = []\n", formula.ErrUnknownKey,
			`f.toml:13: followups.x.var: unknown key "var"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := formula.Parse("f.toml", []byte(followupBase+tt.src))
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Fatalf("error %v, want %q wrapping %v", err, tt.msg, tt.want)
			}
		})
	}
}

// RenderFollowup takes exactly the declared values, fills in the protocol
// words, and never expands a value again.
func TestRenderFollowup(t *testing.T) {
	f, err := formula.Parse("f.toml", []byte(followupBase+
		"[followups.x]\ndescription = \"d\"\nvars = [\"pr\", \"text\"]\ntext = \"PR {{pr}}: {{text}}. Then write {{phase_awaiting_ci}}.\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.RenderFollowup("x", map[string]string{"pr": "7", "text": "{{pr}} {{phase_done}}"})
	if want := "PR 7: {{pr}} {{phase_done}}. Then write " + phase.AwaitingCI.Line() + "."; err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if _, err := f.RenderFollowup("x", map[string]string{"pr": "7"}); !errors.Is(err, formula.ErrMissingVar) {
		t.Errorf("missing value: %v", err)
	}
	if _, err := f.RenderFollowup("x", map[string]string{"pr": "7", "text": "t", "more": "m"}); !errors.Is(err, formula.ErrUndeclaredVar) {
		t.Errorf("extra value: %v", err)
	}
	if _, err := f.RenderFollowup("y", nil); !errors.Is(err, formula.ErrUnknownFollowup) {
		t.Errorf("unknown follow-up: %v", err)
	}
}

// The dev formula's follow-ups, rendered with sample values, are golden.
func TestGoldenFollowups(t *testing.T) {
	f, err := formula.Load(shippedFS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Followups) == 0 {
		t.Fatal("the dev formula has no follow-ups")
	}
	var b strings.Builder
	for _, fu := range f.Followups {
		vals := map[string]string{}
		for _, v := range fu.Vars {
			vals[v] = "<" + v + ">"
		}
		out, err := f.RenderFollowup(fu.Name, vals)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("=== " + fu.Name + "\n" + out + "\n\n")
	}
	golden(t, "dev-followups", b.String())
}
