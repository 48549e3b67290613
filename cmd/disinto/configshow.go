package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/config"
)

// shownSetting is one line of `disinto config show`.
type shownSetting struct {
	Name string `json:"name"`
	// Value is masked for a secret; empty while unset.
	Value string `json:"value"`
	// Source is where the value came from: an env file, the encrypted
	// env file, the process environment, a project file, or "default".
	Source string `json:"source"`
	Secret bool   `json:"secret,omitempty"`
}

// shownProject is a project file's part of `disinto config show`.
type shownProject struct {
	Name     string         `json:"name"`
	File     string         `json:"file"`
	Settings []shownSetting `json:"settings"`
}

// masked stands for a secret's value.
const masked = "********"

func (a *app) configShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value came from",
		Long: "Every setting read from the environment, with its value and where it came from (the env file,\n" +
			"the encrypted env file or the process environment; unset ones take their default, which\n" +
			".env.example gives), then each project file's keys with their values. Secrets are masked.",
		Example: "  disinto config show\n  disinto config show --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			env := envSettings(cfg.Env, a.envFile)
			projects, err := projectSettings(cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"environment": env, "projects": projects})
			}
			return writeSettings(a.stdout, env, projects)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// envSettings are the registered variables as env holds them: each fixed
// one, set or not, and every member of a family that is set.
func envSettings(env config.Env, envFile string) []shownSetting {
	var out []shownSetting
	all := env.Map()
	for _, v := range config.Vars() {
		if !v.Prefix {
			out = append(out, shownEnv(env, v.Name, v.Secret(), envFile))
			continue
		}
		var members []string
		for name := range all {
			if known, _ := config.VarOf(name); v.Matches(name) && known.Name == v.Name {
				members = append(members, name)
			}
		}
		sort.Strings(members)
		for _, name := range members {
			out = append(out, shownEnv(env, name, v.Secret() || config.IsSecretName(name), envFile))
		}
	}
	return out
}

func shownEnv(env config.Env, name string, secret bool, envFile string) shownSetting {
	val, set := env.Lookup(name)
	s := shownSetting{Name: name, Value: val, Source: string(env.Source(name)), Secret: secret}
	switch {
	case !set:
		s.Source = "default"
	case secret && val != "":
		s.Value = masked
	}
	switch env.Source(name) {
	case config.SourceEnvFile:
		s.Source += " " + envFile
	case config.SourceSealed:
		s.Source += " " + config.EncryptedEnvFile(envFile)
	}
	return s
}

// projectSettings are the keys each project file sets, with their values;
// the keys it leaves out take the defaults projects/example.toml.example
// gives.
func projectSettings(cfg *config.Config) ([]shownProject, error) {
	var out []shownProject
	for _, p := range cfg.Projects {
		var doc map[string]any
		md, err := toml.DecodeFile(p.File, &doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.File, err)
		}
		sp := shownProject{Name: p.Name, File: p.File}
		for _, key := range md.Keys() {
			val, leaf := lookupKey(doc, key)
			if !leaf {
				continue
			}
			name := key.String()
			secret := config.IsSecretName(strings.ToUpper(key[len(key)-1]))
			text, _ := json.Marshal(val)
			s := shownSetting{Name: name, Value: string(text), Source: "project file", Secret: secret}
			if secret {
				s.Value = masked
			}
			sp.Settings = append(sp.Settings, s)
		}
		out = append(out, sp)
	}
	return out, nil
}

// lookupKey is key's value in doc, and whether it is a value rather than
// a table.
func lookupKey(doc map[string]any, key toml.Key) (any, bool) {
	var cur any = doc
	for _, part := range key {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[part]
	}
	switch cur.(type) {
	case map[string]any, []map[string]any:
		return nil, false
	}
	return cur, true
}

func writeSettings(w io.Writer, env []shownSetting, projects []shownProject) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENVIRONMENT\tVALUE\tFROM")
	for _, s := range env {
		val := s.Value
		if s.Source == "default" {
			val = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, val, s.Source)
	}
	for _, p := range projects {
		fmt.Fprintf(tw, "\nPROJECT %s\tVALUE\t%s\n", p.Name, p.File)
		for _, s := range p.Settings {
			fmt.Fprintf(tw, "%s\t%s\t\n", s.Name, s.Value)
		}
		fmt.Fprintln(tw, "(every other key: its default)\t\t")
	}
	return tw.Flush()
}
