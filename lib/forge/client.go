package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/wait"
)

// Paging limits. Gitea and Forgejo cap page sizes at 50 by default
// ([api] MAX_RESPONSE_ITEMS), so asking for more only wastes nothing but
// asking for less costs requests.
const (
	pageSize = 50
	maxPages = 100
)

// Options configures a Client.
type Options struct {
	// URL is the forge base URL, e.g. http://forgejo:3000.
	URL string
	// Token is the API token; empty means anonymous (or Password below).
	Token string
	// User names the identity in error messages (e.g. "dev-bot"). With
	// Password set it is also the basic-auth login.
	User string
	// Password switches to basic auth (needed to create tokens).
	Password string
	// HTTPClient is the base client; its Transport is wrapped with retries
	// and its Timeout applies to each attempt, not to all retries together.
	// A nil client or a zero Timeout means DefaultAttemptTimeout: no forge
	// call waits without a deadline.
	HTTPClient *http.Client
	// Logger receives debug lines per request.
	Logger zerolog.Logger
	// MaxRetries bounds retries of one request; 0 means the default (5),
	// negative disables retries.
	MaxRetries int
	// Redactor masks secrets in every text the client writes to the forge
	// (comment, issue, pull request and review bodies and titles, merge
	// messages). The client's own token and password are always masked,
	// as are the redact package's patterns, also when it is nil.
	Redactor *redact.Redactor
	// Instance names the process's claims (the daemon's id, kept in its
	// data dir, of which one daemon holds the lock): a claim comment of a
	// previous life of the same instance, left by a kill mid-claim, is its
	// own orphan, deleted instead of waited out. Empty: no claim is
	// recognised as an orphan before it expires.
	Instance string
	// OnRequest, if set, is called after every HTTP attempt (status 0 on
	// network errors), e.g. to count forge requests for metrics.
	OnRequest func(method, path string, status int, d time.Duration)
}

// DefaultAttemptTimeout bounds one HTTP attempt when the caller sets none.
const DefaultAttemptTimeout = 30 * time.Second

// Client talks to one forge as one identity. It is safe for concurrent use.
type Client struct {
	url      string
	token    string
	user     string
	password string
	http     *http.Client

	// red is the caller's redactor, own masks this client's credentials.
	red, own *redact.Redactor

	// wait blocks for d or until ctx ends (injectable in tests).
	wait func(ctx context.Context, d time.Duration) error

	meMu sync.Mutex
	me   *User

	labels labelCache
	// instance names this process's claim comments; see Options.Instance.
	instance string
}

// New returns a Client for opts. It does not contact the server.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("forge url %q: must be an absolute http(s) URL", opts.URL)
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	attempt := base.Timeout
	if attempt <= 0 {
		attempt = DefaultAttemptTimeout
	}
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	retries := opts.MaxRetries
	switch {
	case retries == 0:
		retries = defaultMaxRetries
	case retries < 0:
		retries = 0
	}
	hc := *base
	hc.Timeout = 0
	hc.Transport = &transport{
		attemptTimeout: attempt,
		next:           next,
		maxRetries:     retries,
		onRequest:      opts.OnRequest,
		log:            opts.Logger,
		wait:           wait.For,
		now:            time.Now,
	}
	return &Client{
		url:      strings.TrimSuffix(opts.URL, "/"),
		token:    opts.Token,
		user:     opts.User,
		password: opts.Password,
		http:     &hc,
		red:      opts.Redactor,
		own:      redact.New(opts.Token, opts.Password),
		wait:     wait.For,
		instance: opts.Instance,
	}, nil
}

// text masks secrets in s before it is written to the forge. Every
// method that posts free text (which may quote model output, command
// output or errors) passes it through here, so no caller can forget to.
func (c *Client) text(s string) string {
	return c.own.String(c.red.String(s))
}

// URL returns the forge base URL.
func (c *Client) URL() string { return c.url }

// api returns an SDK client bound to ctx. The SDK keeps its context on the
// client, so one is made per call; that costs an allocation, no request.
func (c *Client) api(ctx context.Context) *gitea.Client {
	opts := []gitea.ClientOption{
		gitea.SetHTTPClient(c.http),
		gitea.SetContext(ctx),
		gitea.SetGiteaVersion(""),
	}
	if c.password != "" {
		opts = append(opts, gitea.SetBasicAuth(c.user, c.password))
	} else if c.token != "" {
		opts = append(opts, gitea.SetToken(c.token))
	}
	// NewClient fails only on option or version errors, neither possible
	// with the fixed options above.
	g, _ := gitea.NewClient(c.url, opts...)
	return g
}

// check turns an SDK result into a wrapped, typed error.
func (c *Client) check(op string, resp *gitea.Response, err error) error {
	if resp != nil && resp.StatusCode >= 400 {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		se := &StatusError{Status: resp.StatusCode, Message: msg, User: c.user}
		if resp.Request != nil {
			se.Method, se.Path = resp.Request.Method, resp.Request.URL.Path
		}
		return fmt.Errorf("%s: %w", op, se)
	}
	var syn *json.SyntaxError
	if err != nil && (errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The forge answered, but not with the JSON it promised (cut
		// short): its fault, and worth another try later.
		return fmt.Errorf("%s: malformed answer: %w: %w", op, ErrUnavailable, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// do sends a raw JSON request through the same retrying transport, for
// endpoints or fields the SDK lacks. in and out may be nil; out may be a
// *[]byte to receive the raw body.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.url + "/api/v1" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.password != "" {
		req.SetBasicAuth(c.user, c.password)
	} else if c.token != "" {
		req.Header.Set("Authorization", "token "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("read %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Message: messageOf(data), User: c.user}
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = data
		return nil
	default:
		if err := json.Unmarshal(data, out); err != nil {
			// The forge answered, but not with what it promised: its
			// fault, and worth another try later.
			return fmt.Errorf("decode %s %s: %w: %w", method, path, ErrUnavailable, err)
		}
	}
	return nil
}

// paginate fetches pages of pageSize until the forge's total count
// (X-Total-Count) is reached or a page comes back empty, stopping at
// maxPages with ErrPageCap. A forge may serve fewer items per page than
// asked for (its [api] MAX_RESPONSE_ITEMS), so a short page ends the list
// only when the forge sends no total.
func paginate[T any](fetch func(page int) ([]T, *gitea.Response, error)) ([]T, error) {
	var all []T
	for page := 1; page <= maxPages; page++ {
		items, resp, err := fetch(page)
		if err != nil {
			return all, err
		}
		all = append(all, items...)
		if len(items) == 0 {
			return all, nil
		}
		if total, ok := totalCount(resp); ok {
			if len(all) >= total {
				return all, nil
			}
			continue
		}
		// A page longer than asked for means the server ignored paging.
		if len(items) != pageSize {
			return all, nil
		}
	}
	return all, fmt.Errorf("%d pages of %d: %w", maxPages, pageSize, ErrPageCap)
}

// paginateUntil reads pages of a list sorted newest first and returns its
// items up to the first one past reports as beyond the window (left
// out), or to the end of the list.
func paginateUntil[T any](fetch func(page int) ([]T, error), past func(T) bool) ([]T, error) {
	var out []T
	for page := 1; page <= maxPages; page++ {
		items, err := fetch(page)
		if err != nil {
			return out, err
		}
		if len(items) == 0 {
			return out, nil
		}
		for _, it := range items {
			if past(it) {
				return out, nil
			}
			out = append(out, it)
		}
	}
	return out, fmt.Errorf("%d pages of %d: %w", maxPages, pageSize, ErrPageCap)
}

// totalCount reads the X-Total-Count header of a list response.
func totalCount(resp *gitea.Response) (int, bool) {
	if resp == nil || resp.Response == nil {
		return 0, false
	}
	n, err := strconv.Atoi(resp.Header.Get("X-Total-Count"))
	return n, err == nil && n >= 0
}

// Me returns the authenticated user, cached after the first success.
func (c *Client) Me(ctx context.Context) (User, error) {
	c.meMu.Lock()
	defer c.meMu.Unlock()
	if c.me != nil {
		return *c.me, nil
	}
	u, resp, err := c.api(ctx).GetMyUserInfo()
	if err := c.check("get authenticated user", resp, err); err != nil {
		return User{}, err
	}
	me := toUser(u)
	c.me = &me
	return me, nil
}

// isStatus reports whether err is a StatusError with the given status.
func isStatus(err error, status int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == status
}
