package doctor

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provision"
)

// Check names of the edge.
const (
	CheckEdge     = "edge"
	CheckOAuthApp = "oauth2-app"
)

// edgeCheckEnv is, when the doctor reaches the edge elsewhere than at its
// public URL (edge.URLEnv, from another container), that address.
const edgeCheckEnv = "DISINTO_EDGE_CHECK_URL"

// checkEdge checks, when an edge is configured, the chat's OAuth2
// application on the forge and every route of the edge: the forge
// answers at /, the chat and the status page refuse a request without a
// session (fail closed), and the login sends browsers to the forge's
// authorize page. An edge that does not answer is a warning: it may start
// after the daemon. So is a route the edge disabled for a missing secret:
// the rest of the edge works.
func checkEdge(ctx context.Context, r *Report, o Options, cfg *config.Config) {
	env := cfg.Env
	public := strings.TrimRight(env.Get(edge.URLEnv), "/")
	if public == "" {
		return
	}
	clientID := env.Get(provision.ChatClientIDEnv)
	checkOAuthApp(ctx, r, o, cfg, public, clientID)
	base := strings.TrimRight(env.Get(edgeCheckEnv), "/")
	if base == "" {
		base = public
	}
	noRedirect := *o.HTTPClient
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	routes := edge.Config{}.Routes()
	for _, rt := range routes {
		path := "/"
		switch rt.Name {
		case edge.RouteChatLogin:
			path = edge.LoginPath
		case edge.RouteChat:
			path = "/chat/"
		case edge.RouteFactory:
			path = "/factory/"
		}
		checkRoute(ctx, r, &noRedirect, base, path, rt, clientID)
	}
}

// checkRoute probes one route of the edge at base.
func checkRoute(ctx context.Context, r *Report, c *http.Client, base, path string, rt edge.Route, clientID string) {
	subject := rt.Name + " " + base + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		r.add(CheckEdge, subject, Warning, err.Error(), "set DISINTO_EDGE_URL (or DISINTO_EDGE_CHECK_URL) to the edge's URL")
		return
	}
	resp, err := c.Do(req)
	if err != nil {
		r.add(CheckEdge, subject, Warning, "the edge does not answer: "+oneLine(err.Error()),
			"start it (docker compose --profile edge up -d edge) or set DISINTO_EDGE_CHECK_URL to where this host reaches it")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_ = resp.Body.Close()
	st := resp.StatusCode
	loc := resp.Header.Get("Location")
	switch {
	case resp.Header.Get(edge.DisabledHeader) != "":
		r.add(CheckEdge, subject, Warning, "disabled: "+oneLine(string(body)),
			"set "+resp.Header.Get(edge.DisabledHeader)+" in .env (e.g. openssl rand -hex 24), then docker compose --profile edge up -d (the edge and the chat read it at start)")
	case st >= 300 && st < 400 && strings.HasPrefix(loc, "https://") && rt.Name != edge.RouteChatLogin:
		r.add(CheckEdge, subject, Warning, "the edge redirects to "+loc+": this address is its plain-HTTP side",
			"set DISINTO_EDGE_CHECK_URL to the edge's https URL")
	case st == http.StatusBadGateway || st == http.StatusServiceUnavailable || st == http.StatusGatewayTimeout:
		r.add(CheckEdge, subject, Warning, fmt.Sprintf("the edge answers %d: its upstream %s does not", st, rt.Upstream),
			"start the service behind it; docker compose --profile edge ps")
	case rt.Check != "" && st != http.StatusUnauthorized:
		r.add(CheckEdge, subject, Blocking, fmt.Sprintf("answers %d without a session, want 401: the route is not behind the chat's login", st),
			"regenerate the edge's Caddyfile (restart the edge: it runs disinto edge caddyfile at start)")
	case rt.Name == edge.RouteChatLogin:
		u, _ := url.Parse(loc)
		if st != http.StatusFound || u == nil || !strings.HasSuffix(u.Path, "/login/oauth/authorize") || (clientID != "" && u.Query().Get("client_id") != clientID) {
			r.add(CheckEdge, subject, Warning, fmt.Sprintf("the login answers %d %s, want a redirect to the forge's authorize page with client %s", st, oneLine(loc), clientID),
				"check the chat's logs (docker compose logs chat) and its CHAT_OAUTH_CLIENT_ID")
			return
		}
		r.add(CheckEdge, subject, OK, "sends browsers to the forge's login", "")
	case rt.Check == "" && st >= 400:
		r.add(CheckEdge, subject, Warning, fmt.Sprintf("the forge answers %d through the edge", st), "check the forge (docker compose ps forgejo)")
	default:
		r.add(CheckEdge, subject, OK, fmt.Sprintf("answers %d", st), "")
	}
}

// checkOAuthApp checks that the chat's OAuth2 application is known in the
// env file and, with the admin's credentials, that the forge has it with
// the edge's callback.
func checkOAuthApp(ctx context.Context, r *Report, o Options, cfg *config.Config, public, clientID string) {
	fix := "run provisioning again with the edge's URL (DISINTO_EDGE_URL in .env, then docker compose up provision)"
	if clientID == "" || cfg.Env.Get(provision.ChatClientSecretEnv) == "" {
		r.add(CheckOAuthApp, provision.ChatAppName, Warning, "no "+provision.ChatClientIDEnv+" or "+provision.ChatClientSecretEnv+" in the env file: nobody can log in to the chat", fix)
		return
	}
	var admin interface {
		ListOAuth2Apps(context.Context) ([]forge.OAuth2App, error)
	}
	if len(cfg.Projects) > 0 {
		if c := adminClient(o, cfg.Env, cfg.Projects[0].ForgeURL); c != nil {
			admin = c
		}
	}
	if admin == nil {
		r.add(CheckOAuthApp, provision.ChatAppName, OK, "credentials present (not checked on the forge: no admin credentials here)", "")
		return
	}
	apps, err := admin.ListOAuth2Apps(ctx)
	if err != nil {
		r.add(CheckOAuthApp, provision.ChatAppName, Warning, "cannot list the admin's OAuth2 applications: "+oneLine(err.Error()), "check the admin credentials")
		return
	}
	want := provision.ChatRedirectURI(public)
	for _, a := range apps {
		if a.ClientID != clientID {
			continue
		}
		for _, u := range a.RedirectURIs {
			if u == want {
				r.add(CheckOAuthApp, provision.ChatAppName, OK, "on the forge with the callback "+want, "")
				return
			}
		}
		r.add(CheckOAuthApp, provision.ChatAppName, Blocking, fmt.Sprintf("its redirect URIs %v lack %s: the forge refuses every login", a.RedirectURIs, want), fix)
		return
	}
	r.add(CheckOAuthApp, provision.ChatAppName, Blocking, "the forge has no OAuth2 application with the client id "+clientID, fix)
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
