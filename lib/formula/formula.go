// Package formula parses, validates and renders formulas: TOML files that
// describe an agent's task in steps. Files are decoded strictly into raw
// structs that mirror the file, validated with file:line errors naming the
// field, and converted into a Formula, the only type agents ever see.
// Render builds the whole prompt for a claude session from a Formula.
//
// An agent resolves and renders its formula like this (cmd wires the
// embedded defaults from package formulas):
//
//	r := formula.Resolver{Embedded: formulas.FS, ProfileDir: profile, OpsDir: ops, Logger: log}
//	f, src, err := r.Resolve("dev")
//	prompt, err := formula.Render(f, formula.RenderInput{
//		Role: "dev", Project: p.Name, Repo: p.Repo, ForgeAPI: api, TokenEnv: "FORGE_TOKEN",
//		Vars:      map[string]string{"issue": "42", "issue_title": title},
//		RepoFS:    os.DirFS(worktree), OpsFS: os.DirFS(opsCheckout),
//		Blocks:    []formula.Block{{Title: "Issue #42: " + title, Body: body}},
//		Lessons:   lessons,
//		Protocols: []formula.Protocol{formula.ProtocolPhase, formula.ProtocolResult},
//		PhaseFile: phasePath, ResultFile: resultPath, Branch: branch, PrimaryBranch: "main",
//		Logger:    log,
//	})
//
// The session's environment must then carry the DISINTO_* variables named
// in protocol.go with the same values.
package formula

import (
	"strings"
	"time"
)

// Formula is a validated formula. Steps are in topological order of their
// needs (declaration order among independent steps).
type Formula struct {
	// Name equals the file's base name without ".toml".
	Name        string
	Description string
	Version     int
	// Model is the preferred model alias ("opus", "sonnet"); empty means
	// the runner's default.
	Model string
	// ContextFiles are injected into the prompt in this order.
	ContextFiles []ContextFile
	// Vars are the declared variables, sorted by name.
	Vars  []Var
	Steps []Step
	// StackScript (reproduce, triage) is the command, relative to the
	// project checkout, that (re)starts the project stack.
	StackScript string
	// Tools names the MCP servers the run needs.
	Tools []string
	// TimeoutMinutes bounds the run; 0 means the runner's default.
	TimeoutMinutes int
	// Followups are the prompts a session is resumed with, by name.
	Followups []Followup
	// File is where the formula was read from, for messages.
	File string

	varLines map[string]int
}

// ContextFile is one entry of [context].files.
type ContextFile struct {
	// Ops is true for entries written with the "ops:" prefix: the path is
	// relative to the ops repository instead of the project repository.
	Ops bool
	// Path is relative to the repository root, without the prefix.
	Path string
}

// String returns the entry as written in the formula.
func (c ContextFile) String() string {
	if c.Ops {
		return opsPrefix + c.Path
	}
	return c.Path
}

const opsPrefix = "ops:"

// Var is a declared template variable, referenced as {{name}} in step text.
type Var struct {
	Name        string
	Description string
	Required    bool
	// Default is used when no value is supplied; HasDefault tells an
	// explicit empty default from none.
	Default    string
	HasDefault bool
}

// Step is one step of the task.
type Step struct {
	ID          string
	Title       string
	Description string
	// Needs lists the ids of the steps that must be done first.
	Needs []string
}

// Timeout returns TimeoutMinutes as a duration (0 when unset).
func (f *Formula) Timeout() time.Duration {
	return time.Duration(f.TimeoutMinutes) * time.Minute
}

// Var returns the declared variable name.
func (f *Formula) Var(name string) (Var, bool) {
	for _, v := range f.Vars {
		if v.Name == name {
			return v, true
		}
	}
	return Var{}, false
}

// Text returns every piece of prose in the formula, for checks that search
// its wording.
func (f *Formula) Text() string {
	var b strings.Builder
	b.WriteString(f.Description)
	for _, s := range f.Steps {
		b.WriteString("\n")
		b.WriteString(s.Title)
		b.WriteString("\n")
		b.WriteString(s.Description)
	}
	for _, fu := range f.Followups {
		b.WriteString("\n")
		b.WriteString(fu.Text)
	}
	return b.String()
}
