package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/edge"
)

// edgeConfig reads the edge's settings from the environment; a bad port
// names its variable.
func (a *app) edgeConfig() (edge.Config, error) {
	c := edge.Config{Host: a.getenv(edge.HostEnv), Email: a.getenv(edge.EmailEnv), AccessLog: a.getenv(edge.AccessLogEnv),
		Forge: a.getenv(edge.ForgeEnv), Status: a.getenv(edge.StatusEnv), Chat: a.getenv(edge.ChatEnv)}
	for _, p := range []struct {
		name string
		dst  *int
	}{{edge.PortEnv, &c.Port}, {edge.TLSPortEnv, &c.TLSPort}} {
		if v := a.getenv(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return c, fmt.Errorf("%s=%q: want a port number", p.name, v)
			}
			*p.dst = n
		}
	}
	return c, nil
}

// edgeCmd groups the edge's commands.
func (a *app) edgeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "edge",
		Short:   "The edge: one entry point (Caddy) for the forge, the status page and the chat",
		Example: "  disinto edge caddyfile\n  disinto edge caddyfile --out /etc/caddy/Caddyfile",
	}
	cmd.AddCommand(a.edgeCaddyfileCmd())
	return cmd
}

func (a *app) edgeCaddyfileCmd() *cobra.Command {
	var out string
	var requireSecrets bool
	cmd := &cobra.Command{
		Use:   "caddyfile",
		Short: "Print the edge's Caddyfile, generated from the DISINTO_EDGE_* settings",
		Long: "Renders the edge's Caddyfile: / to the forge, /factory/ to the daemon's status page and\n" +
			"/chat/ to the chat, both behind the chat's forward-auth check. With DISINTO_EDGE_HOST set,\n" +
			"Caddy serves that name on ports 80 and 443 with automatic certificates; without it, plain\n" +
			"HTTP on DISINTO_EDGE_PORT (default 80). The edge container runs it at every start, so the\n" +
			"file always follows the settings. The file holds no secret: Caddy reads\n" +
			edge.SecretEnv + " and " + edge.StatusTokenEnv + " from its environment.\n\n" +
			"The settings are checked first: a bad one is an error naming it. The forge needs no secret\n" +
			"and is always served. Without " + edge.SecretEnv + " the chat's routes and /factory/ (behind\n" +
			"the chat's check) are disabled, without " + edge.StatusTokenEnv + " /factory/ is: they answer 503\n" +
			"naming what to set, and one warning line on stderr says so. --require-secrets refuses to\n" +
			"write a file instead.",
		Example: "  disinto edge caddyfile\n  DISINTO_EDGE_HOST=factory.example.org disinto edge caddyfile --out /etc/caddy/Caddyfile",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.edgeConfig()
			if err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return edgeSettingError(err)
			}
			if requireSecrets {
				if err := a.checkEdgeSecrets(); err != nil {
					return err
				}
			}
			if c, err = c.WithSecrets(a.getenv); err != nil {
				return err
			}
			text, err := edge.Caddyfile(c)
			if err != nil {
				return err
			}
			if w := c.Warning(); w != "" {
				fmt.Fprintf(a.stderr, "disinto: warning: %s\n", w)
			}
			if out == "" {
				_, err := fmt.Fprint(a.stdout, text)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			return atomicfile.Write(out, []byte(text), 0o644)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the file here instead of printing it")
	cmd.Flags().BoolVar(&requireSecrets, "require-secrets", false, "fail when "+edge.SecretEnv+" or "+edge.StatusTokenEnv+" is unset, rather than disable their routes")
	return cmd
}

// edgeFieldEnv is the variable each field of the edge's configuration is
// read from.
var edgeFieldEnv = map[string]string{
	edge.FieldHost: edge.HostEnv, edge.FieldPort: edge.PortEnv, edge.FieldTLSPort: edge.TLSPortEnv, edge.FieldEmail: edge.EmailEnv,
	edge.FieldForge: edge.ForgeEnv, edge.FieldStatus: edge.StatusEnv, edge.FieldChat: edge.ChatEnv,
	edge.FieldLog: edge.AccessLogEnv,
}

// edgeSettingError names the variable of a bad field, as the port's
// parse error does; other errors are returned as they are.
func edgeSettingError(err error) error {
	var fe *edge.FieldError
	if errors.As(err, &fe) {
		if name, ok := edgeFieldEnv[fe.Field]; ok {
			return fmt.Errorf("%s=%s: %s", name, fe.Value, fe.Want)
		}
	}
	return err
}

// checkEdgeSecrets fails when the edge would run without the values its
// checks need.
func (a *app) checkEdgeSecrets() error {
	var errs []error
	for _, name := range []string{edge.SecretEnv, edge.StatusTokenEnv} {
		if len(a.getenv(name)) < daemon.MinStatusToken {
			errs = append(errs, fmt.Errorf("%s must be set, %d characters or more (e.g. openssl rand -hex 24), in .env", name, daemon.MinStatusToken))
		}
	}
	return errors.Join(errs...)
}

// edgeURL is the edge's public URL: DISINTO_EDGE_URL, else what the edge
// settings make of it.
func (a *app) edgeURL() string {
	if v := a.getenv(edge.URLEnv); v != "" {
		return v
	}
	c, err := a.edgeConfig()
	if err != nil {
		return edge.Config{}.PublicURL()
	}
	return c.PublicURL()
}
