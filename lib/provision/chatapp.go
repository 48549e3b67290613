package provision

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The chat's OAuth2 application on the forge: the chat (lib/chat) logs
// people in with their forge accounts through it.
const (
	// ChatAppName names the application, owned by the admin.
	ChatAppName = "disinto-chat"
	// ChatClientIDEnv and ChatClientSecretEnv hold its credentials in the
	// env file.
	ChatClientIDEnv     = "CHAT_OAUTH_CLIENT_ID"
	ChatClientSecretEnv = "CHAT_OAUTH_CLIENT_SECRET"
	// chatCallback is the redirect URI's path under the edge's URL
	// (lib/edge.CallbackPath).
	chatCallback = "/chat/oauth/callback"
)

// ChatRedirectURI is the OAuth2 redirect URI of a chat behind an edge at
// edgeURL.
func ChatRedirectURI(edgeURL string) string { return strings.TrimRight(edgeURL, "/") + chatCallback }

// ensureChatApp makes the chat's OAuth2 application exist with the
// redirect URI under ChatURL, and its client id and secret known in the
// env file. The forge shows a secret only when it makes one, so an
// application whose secret the env file lacks gets a new one.
func (p *run) ensureChatApp(ctx context.Context) error {
	if p.opts.ChatURL == "" {
		return nil
	}
	if u, err := url.Parse(p.opts.ChatURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("provision: chat URL %q: want http(s)://host", p.opts.ChatURL)
	}
	redirect := ChatRedirectURI(p.opts.ChatURL)
	apps, err := p.admin.ListOAuth2Apps(ctx)
	if err != nil {
		return err
	}
	id, secret := p.env.Get(ChatClientIDEnv), p.env.Get(ChatClientSecretEnv)
	p.secret(secret)
	for _, a := range apps {
		if a.Name != ChatAppName {
			continue
		}
		if a.ClientID == id && secret != "" && slices.Equal(a.RedirectURIs, []string{redirect}) && a.Confidential && !p.opts.RotateTokens {
			p.rep.add("oauth2 app", ChatAppName, StatusPresent, redirect)
			return nil
		}
		up, err := p.admin.UpdateOAuth2App(ctx, a.ID, ChatAppName, []string{redirect})
		if err != nil {
			return err
		}
		if err := p.storeChatApp(up.ClientID, up.ClientSecret); err != nil {
			return err
		}
		p.rep.add("oauth2 app", ChatAppName, StatusUpdated, "new secret "+ChatClientSecretEnv+", "+redirect)
		return nil
	}
	app, err := p.admin.CreateOAuth2App(ctx, ChatAppName, []string{redirect})
	if err != nil {
		return err
	}
	if err := p.storeChatApp(app.ClientID, app.ClientSecret); err != nil {
		return err
	}
	p.rep.add("oauth2 app", ChatAppName, StatusCreated, ChatClientIDEnv+", "+ChatClientSecretEnv+", "+redirect)
	return nil
}

// storeChatApp saves the application's credentials in the env file.
func (p *run) storeChatApp(id, secret string) error {
	if id == "" || secret == "" {
		return fmt.Errorf("provision: the forge returned OAuth2 application %s without its client id or secret", ChatAppName)
	}
	p.secret(secret)
	changed := p.env.Set(ChatClientIDEnv, id)
	changed = p.env.Set(ChatClientSecretEnv, secret) || changed
	return p.saveEnv(changed)
}
