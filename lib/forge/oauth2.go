package forge

import (
	"context"
	"fmt"

	"code.gitea.io/sdk/gitea"
)

// OAuth2App is an OAuth2 application of the client's user: the forge's
// login for another web service (the chat). ClientSecret is only known
// right after CreateOAuth2App or UpdateOAuth2App; listings never show it.
type OAuth2App struct {
	ID           int64
	Name         string
	ClientID     string
	ClientSecret string
	RedirectURIs []string
	Confidential bool
}

func toOAuth2App(a *gitea.Oauth2) OAuth2App {
	return OAuth2App{ID: a.ID, Name: a.Name, ClientID: a.ClientID, ClientSecret: a.ClientSecret,
		RedirectURIs: append([]string(nil), a.RedirectURIs...), Confidential: a.ConfidentialClient}
}

// ListOAuth2Apps lists the OAuth2 applications of the client's user.
func (c *Client) ListOAuth2Apps(ctx context.Context) ([]OAuth2App, error) {
	api := c.api(ctx)
	return paginate(func(page int) ([]OAuth2App, *gitea.Response, error) {
		as, resp, err := api.ListOauth2(gitea.ListOauth2Option{ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize}})
		if err := c.check("list OAuth2 applications of "+c.user, resp, err); err != nil {
			return nil, resp, err
		}
		out := make([]OAuth2App, 0, len(as))
		for _, a := range as {
			out = append(out, toOAuth2App(a))
		}
		return out, resp, nil
	})
}

// CreateOAuth2App creates a confidential OAuth2 application named name
// with the given redirect URIs; the result carries its client secret.
func (c *Client) CreateOAuth2App(ctx context.Context, name string, redirectURIs []string) (OAuth2App, error) {
	a, resp, err := c.api(ctx).CreateOauth2(gitea.CreateOauth2Option{Name: name, ConfidentialClient: true, RedirectURIs: redirectURIs})
	if err := c.check("create OAuth2 application "+name, resp, err); err != nil {
		return OAuth2App{}, err
	}
	return toOAuth2App(a), nil
}

// UpdateOAuth2App sets the name and redirect URIs of application id. The
// forge makes a new client secret with every update; the result carries
// it (the old one stops working).
func (c *Client) UpdateOAuth2App(ctx context.Context, id int64, name string, redirectURIs []string) (OAuth2App, error) {
	a, resp, err := c.api(ctx).UpdateOauth2(id, gitea.CreateOauth2Option{Name: name, ConfidentialClient: true, RedirectURIs: redirectURIs})
	if err := c.check(fmt.Sprintf("update OAuth2 application %d (%s)", id, name), resp, err); err != nil {
		return OAuth2App{}, err
	}
	return toOAuth2App(a), nil
}
