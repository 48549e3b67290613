package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/chat"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/provision"
	"github.com/disinto/disinto/lib/redact"
)

// Environment of the chat (besides the model runner's and the edge's).
const (
	chatListenEnv     = "CHAT_LISTEN"
	forgePublicURLEnv = "FORGE_PUBLIC_URL"
	chatModelEnv      = "CHAT_MODEL"
	// chatAPIKeyEnv, when set, is the model API key of the chat's
	// sessions instead of the agents' credentials.
	chatAPIKeyEnv = "CHAT_ANTHROPIC_API_KEY"
)

// chatCmd runs the chat service.
func (a *app) chatCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Serve the chat with the factory, behind the forge's login (for the edge)",
		Long: "Serves the chat the edge routes /chat/ to: people log in with their forge account (the OAuth2\n" +
			"application `disinto init` made, CHAT_OAUTH_CLIENT_ID and CHAT_OAUTH_CLIENT_SECRET), and\n" +
			"those on the allowlist (DISINTO_CHAT_USERS, comma-separated, plus FORGE_ADMIN_USER) talk to a\n" +
			"claude session about the projects; everyone else gets 403. Sessions run in the session\n" +
			"sandbox, each user's in a workspace of its own, and a conversation goes on with --resume.\n" +
			"It answers the edge's forward-auth checks only with " + edge.SecretEnv + ".\n\n" +
			"Settings: DISINTO_EDGE_URL (the public URL, default http://localhost), FORGE_PUBLIC_URL (the\n" +
			"forge as browsers reach it, default DISINTO_EDGE_URL), FORGE_URL (as the chat reaches it),\n" +
			"CHAT_ANTHROPIC_API_KEY (a key of the chat's own; default the agents' credentials), CHAT_MODEL, CHAT_MAX_TURNS, CHAT_TIMEOUT, CHAT_MAX_MESSAGE_BYTES, CHAT_WORKERS,\n" +
			"CHAT_MAX_REQUESTS_PER_HOUR, CHAT_MAX_REQUESTS_PER_DAY, CHAT_MAX_TOKENS_PER_DAY.",
		Example: "  disinto chat\n  disinto chat --listen 127.0.0.1:8090",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runChat(cmd.Context(), listen)
		},
	}
	a.envFlag(cmd.Flags(), &listen, "listen", chatListenEnv, ":8080", "address to serve on")
	return cmd
}

// runChat builds the chat from the configuration and serves it until ctx
// ends.
func (a *app) runChat(ctx context.Context, listen string) error {
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	// A key of the chat's own, so that its use is accounted (and can be
	// revoked) apart from the agents'.
	if key := a.envOr(chatAPIKeyEnv, cfg.Env.Get(chatAPIKeyEnv)); key != "" {
		b := cfg.Backends[config.DefaultBackend]
		b.APIKey, b.OAuthToken = key, ""
		cfg.Backends[config.DefaultBackend] = b
	}
	red := redact.New(cfg.Secrets()...)
	lo, err := a.logOptions()
	if err != nil {
		return err
	}
	lo.Dir, lo.Console, lo.Redactor = a.layout().Logs(), a.stderr, red
	logs, err := logx.New(lo)
	if err != nil {
		return err
	}
	defer logs.Close()
	log := logs.For("chat")
	svc, err := daemon.NewServices(cfg, red, nil, daemon.CoreOptions{DataDir: a.dataDir, Environ: a.env, AllowUnisolated: a.allowUnisolated, Formulas: formulas.FS}, log)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()
	opts, err := a.chatOptions(cfg, log)
	if err != nil {
		return err
	}
	opts.Runner, opts.Sandbox = svc.Claude, svc.Sandbox
	srv, err := chat.New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("chat listen %s: %w", listen, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: opts.Timeout + opts.QueueWait + time.Minute, IdleTimeout: 2 * time.Minute}
	log.Info().Str("listen", ln.Addr().String()).Str("url", opts.PublicURL).Strs("users", srv.Users()).Int("workers", opts.Workers).
		Msg("chat serving")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// chatOptions reads the chat's settings; a bad number names its variable.
func (a *app) chatOptions(cfg *config.Config, log zerolog.Logger) (chat.Options, error) {
	env := cfg.Env
	get := func(k string) string {
		if v := a.getenv(k); v != "" {
			return v
		}
		return env.Get(k)
	}
	public := a.edgeURL()
	forgeInternal := get("FORGE_URL")
	if forgeInternal == "" && len(cfg.Projects) > 0 {
		forgeInternal = cfg.Projects[0].ForgeURL
	}
	forgePublic := get(forgePublicURLEnv)
	if forgePublic == "" {
		forgePublic = public
	}
	var users []string
	for u := range strings.SplitSeq(get(chat.UsersEnv), ",") {
		if u = strings.TrimSpace(u); u != "" {
			users = append(users, u)
		}
	}
	if admin := get("FORGE_ADMIN_USER"); admin != "" {
		users = append(users, admin)
	}
	f, _, err := formula.Resolver{Embedded: formulas.FS, OpsDir: opsDirOf(cfg), Logger: log}.Resolve("chat")
	if err != nil {
		return chat.Options{}, fmt.Errorf("formula chat: %w", err)
	}
	var repos []string
	for _, p := range cfg.Projects {
		repos = append(repos, p.Repo)
	}
	o := chat.Options{DataDir: a.layout().Chat().Dir(), ForgePublicURL: forgePublic, ForgeInternalURL: forgeInternal,
		ClientID: get(provision.ChatClientIDEnv), ClientSecret: get(provision.ChatClientSecretEnv), PublicURL: public,
		AllowedUsers: users, ForwardSecret: get(edge.SecretEnv), Model: get(chatModelEnv), Log: log,
		SystemPrompt: func(user string) (string, error) {
			return formula.Render(f, formula.RenderInput{Role: "chat", Logger: log,
				Vars: map[string]string{"user": user, "projects": strings.Join(repos, ", "), "forge_url": forgePublic}})
		}}
	if o.Model == "" {
		o.Model = f.Model
	}
	if o.Timeout = f.Timeout(); o.Timeout == 0 {
		o.Timeout = chat.DefaultTimeout
	}
	ints := []struct {
		name string
		dst  *int
	}{{"CHAT_MAX_TURNS", &o.MaxTurns}, {"CHAT_MAX_MESSAGE_BYTES", &o.MaxMessageBytes}, {"CHAT_WORKERS", &o.Workers},
		{"CHAT_MAX_REQUESTS_PER_HOUR", &o.Limits.PerHour}, {"CHAT_MAX_REQUESTS_PER_DAY", &o.Limits.PerDay}}
	for _, i := range ints {
		if v := get(i.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return o, fmt.Errorf("%s=%q: want a positive number", i.name, v)
			}
			*i.dst = n
		}
	}
	if v := get("CHAT_MAX_TOKENS_PER_DAY"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("CHAT_MAX_TOKENS_PER_DAY=%q: want a positive number", v)
		}
		o.Limits.TokensPerDay = n
	}
	if v := get("CHAT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("CHAT_TIMEOUT=%q: want a duration such as 5m", v)
		}
		o.Timeout = d
	}
	return o, nil
}

// opsDirOf is the ops checkout whose formula overrides the chat takes:
// the first project's.
func opsDirOf(cfg *config.Config) string {
	if len(cfg.Projects) == 0 {
		return ""
	}
	return cfg.Projects[0].OpsRepoRoot
}
