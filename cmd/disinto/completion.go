package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/config"
)

// completions wires shell completion (cobra's `disinto completion bash|zsh|
// fish|powershell`) for what the commands take: the role of every command
// whose first argument is a <role>, and the project names of every
// --project flag, read from the projects dir the command line names.
func (a *app) completions(c *cobra.Command) {
	if strings.Contains(c.Use, " <role>") && c.ValidArgsFunction == nil {
		c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			roles := make([]string, 0, len(config.ScheduledRoles()))
			for _, r := range config.ScheduledRoles() {
				roles = append(roles, string(r))
			}
			return roles, cobra.ShellCompDirectiveNoFileComp
		}
	}
	if c.Flags().Lookup("project") != nil {
		_ = c.RegisterFlagCompletionFunc("project", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return projectNames(a.projectsDir), cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, sub := range c.Commands() {
		a.completions(sub)
	}
}

// projectNames lists the names of the project files in dir (their name
// key, or the file's name without .toml), without loading the whole
// configuration: completion works while a token is still missing.
func projectNames(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	var names []string
	for _, f := range files {
		var p struct {
			Name string `toml:"name"`
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if _, err := toml.Decode(string(data), &p); err != nil || p.Name == "" {
			p.Name = strings.TrimSuffix(filepath.Base(f), ".toml")
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}
