// Package edge models the factory's one public entry point, a Caddy reverse
// proxy, and renders its configuration: a pure function from a typed route
// list to Caddyfile text. `/` goes to the forge, `/factory/` to the
// daemon's status page and `/chat/` to the chat; both of the latter pass
// Caddy's forward_auth check against the chat first, which fails closed
// (any answer but 2xx is returned to the client as is). The file holds no
// secret: the forward-auth secret and the status token are environment
// placeholders Caddy reads at start.
//
// Only the forge needs nothing: without the forward-auth secret the chat's
// routes and the status page behind its check are disabled, and without
// the status token the status page is, each answering 503 with what to
// set; the edge still starts and serves the forge.
package edge

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// Environment variables of the edge container, read by Caddy itself
// through {$NAME} placeholders in the generated file.
const (
	// SecretEnv holds the secret the edge sends on every forward-auth
	// check; the chat answers no check without it.
	SecretEnv = "DISINTO_EDGE_SECRET"
	// StatusTokenEnv holds the status listener's bearer token, which the
	// edge adds to the requests of /factory/ it lets through.
	StatusTokenEnv = "DISINTO_STATUS_TOKEN"

	// HostEnv, PortEnv, TLSPortEnv, EmailEnv, ForgeEnv, StatusEnv and
	// ChatEnv are the settings the Caddyfile is generated from (Config).
	HostEnv    = "DISINTO_EDGE_HOST"
	PortEnv    = "DISINTO_EDGE_PORT"
	TLSPortEnv = "DISINTO_EDGE_TLS_PORT"
	EmailEnv   = "DISINTO_EDGE_EMAIL"
	ForgeEnv   = "DISINTO_EDGE_FORGE"
	StatusEnv  = "DISINTO_EDGE_STATUS"
	ChatEnv    = "DISINTO_EDGE_CHAT"
	// URLEnv is the edge's public URL as the other services know it
	// (the chat's OAuth callback, init's OAuth2 application, the
	// doctor's checks); default Config.PublicURL.
	URLEnv = "DISINTO_EDGE_URL"
	// SecretSetEnv says, where the forward-auth secret itself is not (the
	// agents' container), whether the edge has it: compose sets it to
	// "yes" from the same .env, so that status can tell a disabled chat
	// without holding the chat's secret.
	SecretSetEnv = "DISINTO_EDGE_SECRET_SET"
)

// Paths of the chat the edge knows: the forward-auth check, and the two
// that must be reachable without a session (the login and the OAuth
// callback).
const (
	VerifyPath   = "/chat/auth/verify"
	LoginPath    = "/chat/login"
	CallbackPath = "/chat/oauth/callback"
	// UserHeader carries the login the check vouches for to the upstream.
	UserHeader = "X-Forwarded-User"
	// SecretHeader carries SecretEnv's value to the check.
	SecretHeader = "X-Forward-Auth-Secret"
	// DisabledHeader marks the answer of a disabled route; its value
	// names the variables that are missing.
	DisabledHeader = "X-Disinto-Disabled"
)

// MinSecret is the shortest forward-auth secret or status token the edge
// accepts (the chat and the daemon refuse shorter ones too).
const MinSecret = 16

// Default upstreams, the compose services' names and ports.
const (
	DefaultForge   = "forgejo:3000"
	DefaultStatus  = "agents:8081"
	DefaultChat    = "chat:8080"
	DefaultPort    = 80
	DefaultTLSPort = 443
	DefaultAdmin   = "localhost:2019"
)

// ErrInvalid is wrapped by every validation error of a Config.
var ErrInvalid = errors.New("invalid edge configuration")

// Fields of a Config, as a FieldError names them.
const (
	FieldHost    = "host"
	FieldPort    = "port"
	FieldTLSPort = "TLS port"
	FieldEmail   = "email"
	FieldAdmin   = "admin address"
	FieldForge   = "forge upstream"
	FieldStatus  = "status upstream"
	FieldChat    = "chat upstream"
	FieldLog     = "access log"
)

// FieldError is a bad value of one field of a Config; it wraps ErrInvalid.
type FieldError struct {
	// Field is one of the Field constants.
	Field string
	// Value is the bad value, quoted as the field's type wants.
	Value string
	// Want says what the field takes.
	Want string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s %s: %s", ErrInvalid, e.Field, e.Value, e.Want)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Config is what the edge is generated from.
type Config struct {
	// Host is the public name (e.g. factory.example.org). Set, Caddy
	// serves it on ports 80 and 443 with automatic certificates; empty or
	// "localhost", plain HTTP on Port.
	Host string
	// Port is the plain-HTTP port Caddy listens on: the site's without a
	// public name, the redirects' and ACME challenges' with one (behind a
	// port mapping of the host's 80); default 80.
	Port int
	// TLSPort is the HTTPS port Caddy listens on with a public name
	// (behind a mapping of the host's 443); default 443.
	TLSPort int
	// Email is the ACME account address for the certificates; optional.
	Email string
	// AccessLog, when set, is the absolute path Caddy writes its access
	// log to, one JSON line per request, rolled at AccessLogRollSize
	// (ReadAccessLog reads it).
	AccessLog string
	// Forge, Status and Chat are the upstreams as host:port.
	Forge, Status, Chat string
	// Admin is the address of Caddy's admin API (the container's health
	// check reads it); default DefaultAdmin, "off" disables it.
	Admin string
	// NoSecret says SecretEnv is not set where Caddy runs: the chat's
	// routes, and the status page behind the chat's check, are disabled.
	// NoStatusToken says StatusTokenEnv is not: the status page is
	// disabled. A disabled route answers 503 naming what to set instead of
	// proxying. The zero value serves every route; WithSecrets sets both
	// from an environment.
	NoSecret, NoStatusToken bool
}

// Route is one entry of the proxy's table, in the order it is matched.
type Route struct {
	// Name says what the route serves ("forge", "factory", "chat",
	// "chat-login").
	Name string
	// Paths are the request paths it matches ("/chat" and "/chat/*");
	// none matches everything (the last route).
	Paths []string
	// Upstream is host:port.
	Upstream string
	// Check, when set, is the chat upstream (host:port) whose forward-auth
	// check every request must pass first.
	Check string
	// StripPrefix is removed from the path before proxying.
	StripPrefix string
	// BearerEnv, when set, names the variable whose value the edge sends
	// upstream as a bearer token.
	BearerEnv string
	// Disabled, when set, is the text the route answers with a 503
	// instead of proxying, and Missing the variables that would enable it.
	Disabled string
	Missing  []string
}

// Route names.
const (
	RouteChatLogin = "chat-login"
	RouteChat      = "chat"
	RouteFactory   = "factory"
	RouteForge     = "forge"
)

// WithDefaults returns c with the default port and upstreams filled in.
func (c Config) WithDefaults() Config {
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	if c.TLSPort == 0 {
		c.TLSPort = DefaultTLSPort
	}
	if c.Forge == "" {
		c.Forge = DefaultForge
	}
	if c.Status == "" {
		c.Status = DefaultStatus
	}
	if c.Chat == "" {
		c.Chat = DefaultChat
	}
	if c.Admin == "" {
		c.Admin = DefaultAdmin
	}
	return c
}

// TLS reports whether the edge serves a public name with certificates.
func (c Config) TLS() bool { return c.Host != "" && c.Host != "localhost" }

// PublicURL is the base URL people reach the edge at.
func (c Config) PublicURL() string {
	c = c.WithDefaults()
	if c.TLS() {
		return "https://" + c.Host
	}
	if c.Port == 80 {
		return "http://localhost"
	}
	return "http://localhost:" + strconv.Itoa(c.Port)
}

var (
	hostRe  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	emailRe = regexp.MustCompile(`^[^\s@{}"]+@[^\s@{}"]+$`)
)

// Validate reports the first problem of c (after defaults), naming the
// field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.Host != "" && !hostRe.MatchString(c.Host) {
		return &FieldError{FieldHost, strconv.Quote(c.Host), "want a DNS name such as factory.example.org"}
	}
	if c.Port < 1 || c.Port > 65535 {
		return &FieldError{FieldPort, strconv.Itoa(c.Port), "want 1-65535"}
	}
	if c.TLSPort < 1 || c.TLSPort > 65535 || c.TLSPort == c.Port {
		return &FieldError{FieldTLSPort, strconv.Itoa(c.TLSPort), "want 1-65535, not the HTTP port"}
	}
	if c.Email != "" && !emailRe.MatchString(c.Email) {
		return &FieldError{FieldEmail, strconv.Quote(c.Email), "want an address such as ops@example.org"}
	}
	if c.AccessLog != "" && !logPathRe.MatchString(c.AccessLog) {
		return &FieldError{FieldLog, strconv.Quote(c.AccessLog), "want an absolute path of letters, digits and . _ - /"}
	}
	if c.Admin != "off" {
		if err := checkUpstream(c.Admin); err != nil {
			return &FieldError{FieldAdmin, strconv.Quote(c.Admin), err.Error() + ` (or "off")`}
		}
	}
	for _, u := range []struct{ field, v string }{{FieldForge, c.Forge}, {FieldStatus, c.Status}, {FieldChat, c.Chat}} {
		if err := checkUpstream(u.v); err != nil {
			return &FieldError{u.field, strconv.Quote(u.v), err.Error()}
		}
	}
	return nil
}

// WithSecrets returns c with the routes disabled whose variable get does
// not hold (NoSecret, NoStatusToken). A value that is set but shorter than
// MinSecret is an error naming the variable, never a reason to disable.
func (c Config) WithSecrets(get func(string) string) (Config, error) {
	for _, s := range []struct {
		name string
		no   *bool
	}{{SecretEnv, &c.NoSecret}, {StatusTokenEnv, &c.NoStatusToken}} {
		v := get(s.name)
		*s.no = v == ""
		if v != "" && len(v) < MinSecret {
			return c, fmt.Errorf("%w: %s has %d characters: want %d or more (e.g. openssl rand -hex 24)", ErrInvalid, s.name, len(v), MinSecret)
		}
	}
	return c, nil
}

// missing lists the variables c lacks, in the order of their routes.
func (c Config) missing() []string {
	var m []string
	if c.NoSecret {
		m = append(m, SecretEnv)
	}
	if c.NoStatusToken {
		m = append(m, StatusTokenEnv)
	}
	return m
}

// reads lists the variables the file of c reads: those of the routes it
// serves.
func (c Config) reads() []string {
	var read []string
	if !c.NoSecret {
		read = append(read, SecretEnv)
	}
	if !c.NoSecret && !c.NoStatusToken {
		read = append(read, StatusTokenEnv)
	}
	return read
}

// Warning is the one line saying what c disables and why, or "" when it
// serves every route.
func (c Config) Warning() string {
	missing := c.missing()
	if len(missing) == 0 {
		return ""
	}
	var off, on []string
	for _, r := range c.Routes() {
		if r.Name == RouteChatLogin {
			continue // part of the chat
		}
		what := features[r.Name]
		if r.Disabled != "" {
			off = append(off, what)
		} else {
			on = append(on, what)
		}
	}
	return fmt.Sprintf("%s %s not set: %s %s disabled (answering 503); %s %s served", and(missing), plural(missing, "is", "are"),
		and(off), plural(off, "is", "are"), and(on), plural(on, "is", "are"))
}

// features names what each route serves, in the warning.
var features = map[string]string{
	RouteChat:    "the chat (/chat)",
	RouteFactory: "the status page (/factory)",
	RouteForge:   "the forge (/)",
}

// and joins words as a sentence does: "a", "a and b", "a, b and c".
func and(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// plural picks the verb for words.
func plural(words []string, one, many string) string {
	if len(words) == 1 {
		return one
	}
	return many
}

// checkUpstream accepts host:port with a DNS name or an IP address.
func checkUpstream(v string) error {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("want host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("want a port 1-65535")
	}
	if net.ParseIP(host) == nil && !hostRe.MatchString(host) {
		return errors.New("want a host name or an IP address")
	}
	return nil
}

// Routes is the proxy's table for c, in matching order: the chat's login
// and callback without a check, the chat and the status page behind it,
// and the forge for everything else. The chat's routes are disabled
// without the secret, the status page's without the secret or the token.
func (c Config) Routes() []Route {
	c = c.WithDefaults()
	rs := []Route{
		{Name: RouteChatLogin, Paths: []string{LoginPath, CallbackPath}, Upstream: c.Chat},
		// "/chat/*" alone would miss the bare "/chat".
		{Name: RouteChat, Paths: []string{"/chat", "/chat/*"}, Upstream: c.Chat, Check: c.Chat},
		{Name: RouteFactory, Paths: []string{"/factory", "/factory/*"}, Upstream: c.Status, Check: c.Chat,
			StripPrefix: "/factory", BearerEnv: StatusTokenEnv},
		{Name: RouteForge, Upstream: c.Forge},
	}
	if c.NoSecret {
		for i := range rs[:2] {
			rs[i].Missing = []string{SecretEnv}
			rs[i].Disabled = "the chat is not configured: set " + SecretEnv
		}
	}
	if m := c.missing(); len(m) > 0 {
		rs[2].Missing = m
		rs[2].Disabled = "the status page is not configured: set " + and(m)
		if c.NoSecret {
			rs[2].Disabled = "the status page is behind the chat's login, and the chat is not configured: set " + and(m)
		}
	}
	return rs
}

// Caddyfile renders the configuration of c, or says why c is invalid.
func Caddyfile(c Config) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	c = c.WithDefaults()
	var b strings.Builder
	b.WriteString("# Generated by `disinto edge caddyfile` at every start of the edge: edit the\n")
	if read := c.reads(); len(read) > 0 {
		b.WriteString("# DISINTO_EDGE_* settings, not this file. It holds no secret: Caddy reads\n")
		fmt.Fprintf(&b, "# %s from its environment.\n", and(read))
	} else {
		b.WriteString("# DISINTO_EDGE_* settings, not this file. It holds no secret and reads none.\n")
	}
	if w := c.Warning(); w != "" {
		fmt.Fprintf(&b, "# Disabled: %s.\n", w)
	}
	fmt.Fprintf(&b, "{\n\tadmin %s\n", c.Admin)
	if c.TLS() {
		if c.Email != "" {
			fmt.Fprintf(&b, "\temail %s\n", c.Email)
		}
		if c.Port != DefaultPort {
			fmt.Fprintf(&b, "\thttp_port %d\n", c.Port)
		}
		if c.TLSPort != DefaultTLSPort {
			fmt.Fprintf(&b, "\thttps_port %d\n", c.TLSPort)
		}
	}
	b.WriteString("}\n\n")
	if c.TLS() {
		fmt.Fprintf(&b, "%s {\n", c.Host)
	} else {
		fmt.Fprintf(&b, "http://:%d {\n", c.Port)
	}
	if c.AccessLog != "" {
		fmt.Fprintf(&b, "\tlog {\n\t\toutput file %s {\n\t\t\troll_size %s\n\t\t\troll_keep %d\n\t\t}\n\t\tformat json\n\t}\n\n",
			c.AccessLog, AccessLogRollSize, AccessLogRollKeep)
	}
	for i, r := range c.Routes() {
		if i > 0 {
			b.WriteString("\n")
		}
		writeRoute(&b, r)
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// writeRoute renders one route as a handle block (siblings are mutually
// exclusive and, with named matchers, tried in the order written) around a
// route block, whose directives run in the order written.
func writeRoute(b *strings.Builder, r Route) {
	if r.Disabled != "" {
		fmt.Fprintf(b, "\t# %s: disabled\n", r.Name)
	} else {
		fmt.Fprintf(b, "\t# %s\n", r.Name)
	}
	if len(r.Paths) > 0 {
		fmt.Fprintf(b, "\t@%s path %s\n", r.Name, strings.Join(r.Paths, " "))
		fmt.Fprintf(b, "\thandle @%s {\n", r.Name)
	} else {
		b.WriteString("\thandle {\n")
	}
	b.WriteString("\t\troute {\n")
	if r.Disabled != "" {
		// Neither the check nor the upstream: the route names what is
		// missing, and the placeholders of the missing variables appear
		// nowhere.
		b.WriteString("\t\t\theader Content-Type \"text/plain; charset=utf-8\"\n")
		fmt.Fprintf(b, "\t\t\theader %s %q\n", DisabledHeader, strings.Join(r.Missing, ", "))
		fmt.Fprintf(b, "\t\t\trespond %q 503\n", r.Disabled)
		b.WriteString("\t\t}\n\t}\n")
		return
	}
	if r.Check != "" {
		// Only the check may say who the user is: a header the client sent
		// is dropped first, whatever the check answers.
		fmt.Fprintf(b, "\t\t\trequest_header -%s\n", UserHeader)
		fmt.Fprintf(b, "\t\t\tforward_auth %s {\n", r.Check)
		fmt.Fprintf(b, "\t\t\t\turi %s\n", VerifyPath)
		fmt.Fprintf(b, "\t\t\t\tcopy_headers %s\n", UserHeader)
		fmt.Fprintf(b, "\t\t\t\theader_up %s {$%s}\n", SecretHeader, SecretEnv)
		b.WriteString("\t\t\t}\n")
	}
	if r.StripPrefix != "" {
		fmt.Fprintf(b, "\t\t\turi strip_prefix %s\n", r.StripPrefix)
	}
	fmt.Fprintf(b, "\t\t\treverse_proxy %s", r.Upstream)
	var sub []string
	if r.Check != "" {
		// The secret is for the check only.
		sub = append(sub, "header_up -"+SecretHeader)
	}
	if r.BearerEnv != "" {
		sub = append(sub, fmt.Sprintf(`header_up Authorization "Bearer {$%s}"`, r.BearerEnv))
	}
	if len(sub) == 0 {
		b.WriteString("\n")
	} else {
		b.WriteString(" {\n")
		for _, s := range sub {
			fmt.Fprintf(b, "\t\t\t\t%s\n", s)
		}
		b.WriteString("\t\t\t}\n")
	}
	b.WriteString("\t\t}\n\t}\n")
}
