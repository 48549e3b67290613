package doctor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provision"
)

// MinForgeVersion is the oldest Gitea API (Forgejo reports the Gitea
// version it derives from after "+gitea-") the factory works with: the
// token scopes provisioning mints and the doctor probes (read:repository,
// write:issue, read:user) came with Gitea and Forgejo 1.20; older forges
// know other scope names and refuse those tokens.
var MinForgeVersion = [2]int{1, 20}

// fixInit is the fix for anything `disinto init` provisions.
const fixInit = "run disinto init again (it repairs what it provisions and changes nothing else)"

// bot is one identity the daemon would act as, with the jobs that use it.
type bot struct {
	config.Bot
	forgeURL string
	repo     string // a project repository to probe on
	roles    map[config.Role]bool
	jobs     []string // project/role
	// me is the login the forge answered, once checked; ok is whether
	// the token authenticated.
	me string
	ok bool
}

// checkForges checks every forge the projects name, every bot token, and
// each project's webhook and branch protection.
func checkForges(ctx context.Context, r *Report, o Options, cfg *config.Config) {
	up := map[string]bool{}
	for _, p := range cfg.Projects {
		if _, seen := up[p.ForgeURL]; !seen {
			up[p.ForgeURL] = checkForgeVersion(ctx, r, o, p.ForgeURL)
		}
	}
	bots := collectBots(r, cfg)
	for _, b := range bots {
		if up[b.forgeURL] {
			checkBot(ctx, r, o, b)
		}
	}
	for _, p := range cfg.Projects {
		if !up[p.ForgeURL] {
			continue
		}
		checkWebhook(ctx, r, o, cfg.Env, p)
		checkProtection(ctx, r, o, p, bots)
	}
}

// client returns a forge client that does not retry: the doctor says what
// is wrong now.
func client(o Options, url, user, token, password string) (*forge.Client, error) {
	return forge.New(forge.Options{URL: url, User: user, Token: token, Password: password, HTTPClient: o.HTTPClient, MaxRetries: -1})
}

// checkForgeVersion checks that the forge answers and is new enough.
func checkForgeVersion(ctx context.Context, r *Report, o Options, url string) bool {
	c, err := client(o, url, "", "", "")
	if err != nil {
		r.add(CheckForge, url, Blocking, err.Error(), "correct forge_url in the project file or FORGE_URL")
		return false
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		r.add(CheckForge, url, Blocking, "unreachable: "+err.Error(), "start the forge, or correct forge_url in the project file or FORGE_URL")
		return false
	}
	major, minor, ok := parseVersion(v)
	want := fmt.Sprintf("%d.%d", MinForgeVersion[0], MinForgeVersion[1])
	switch {
	case !ok:
		r.add(CheckForge, url, Warning, fmt.Sprintf("version %q is not one the doctor can compare with %s", v, want), "")
	case major < MinForgeVersion[0] || major == MinForgeVersion[0] && minor < MinForgeVersion[1]:
		r.add(CheckForge, url, Blocking, fmt.Sprintf("version %s is older than %s, which the bots' token scopes need", v, want), "upgrade the forge (Forgejo 1.20 or newer, or Gitea 1.20 or newer)")
		return false
	default:
		r.add(CheckForge, url, OK, fmt.Sprintf("reachable, version %s (%s or newer needed)", v, want), "")
	}
	return true
}

// parseVersion reads the Gitea API version of a forge's version string:
// "1.26.0", "1.21.11-1", or Forgejo's "11.0.1+gitea-1.22.0".
func parseVersion(v string) (major, minor int, ok bool) {
	if _, g, found := strings.Cut(v, "+gitea-"); found {
		v = g
	}
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	digits := func(s string) (int, bool) {
		end := 0
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(s[:end])
		return n, err == nil
	}
	major, ok1 := digits(parts[0])
	minor, ok2 := digits(parts[1])
	return major, minor, ok1 && ok2
}

// collectBots resolves the identity of every job the daemon would run,
// one entry per forge and token; a job without a token is a finding.
func collectBots(r *Report, cfg *config.Config) []*bot {
	byKey := map[string]*bot{}
	var order []string
	use := func(p *config.Project, role config.Role, job string, b config.Bot, err error) {
		if errors.Is(err, config.ErrNoIdentity) {
			// The daemon leaves such a role out and runs the others.
			r.add(CheckToken, job, Warning, "not scheduled: "+err.Error(), fixInit)
			return
		}
		if err != nil {
			r.add(CheckToken, job, Blocking, err.Error(), fixInit)
			return
		}
		k := p.ForgeURL + "\x00" + b.TokenVar
		e := byKey[k]
		if e == nil {
			e = &bot{Bot: b, forgeURL: p.ForgeURL, repo: p.Repo, roles: map[config.Role]bool{}}
			byKey[k] = e
			order = append(order, k)
		}
		e.roles[role] = true
		e.jobs = append(e.jobs, job)
	}
	for _, p := range cfg.Projects {
		// Every role the daemon would run, companions included, as the
		// role table says.
		for _, spec := range config.RoleSpecs() {
			if !cfg.RoleRuns(p, spec) {
				continue
			}
			b, err := cfg.Bot(spec.Name)
			use(p, spec.Name, p.Name+"/"+string(spec.Name), b, err)
		}
		for _, la := range cfg.LocalDevAgents(p) {
			b, err := cfg.LocalBot(la)
			use(p, config.RoleDev, p.Name+"/"+la.Name, b, err)
		}
	}
	out := make([]*bot, len(order))
	for i, k := range order {
		out[i] = byKey[k]
	}
	return out
}

// checkBot checks that a token authenticates as its bot and holds every
// scope its roles need.
func checkBot(ctx context.Context, r *Report, o Options, b *bot) {
	subject := b.TokenVar
	c, err := client(o, b.forgeURL, b.User, b.Token, "")
	if err != nil {
		r.add(CheckToken, subject, Blocking, err.Error(), fixInit)
		return
	}
	me, err := c.Me(ctx)
	switch {
	case errors.Is(err, forge.ErrUnauthorized):
		r.add(CheckToken, subject, Blocking, fmt.Sprintf("rejected by %s (used by %s)", b.forgeURL, strings.Join(b.jobs, ", ")), fixInit+": it replaces tokens the forge does not know")
		return
	case errors.Is(err, forge.ErrForbidden):
		// GET /user needs nothing but read:user.
		r.add(CheckToken, subject, Blocking, "lacks the scope read:user, so the daemon cannot ask whose token it is", "disinto init --rotate-tokens mints tokens with the scopes each role needs")
		return
	case err != nil:
		r.add(CheckToken, subject, Blocking, "identity check failed: "+err.Error(), "check that the forge is reachable, then run disinto doctor again")
		return
	}
	b.me = me.Login
	if !strings.EqualFold(me.Login, b.User) {
		r.add(CheckToken, subject, Blocking, fmt.Sprintf("authenticates as %s, not as the configured bot %s", me.Login, b.User),
			fmt.Sprintf("put %s's token in %s, or name the login in FORGE_BOT_USER_%s", b.User, b.TokenVar, strings.ToUpper(string(b.Role))))
		return
	}
	scopes := b.scopes()
	rc := c.Repo(splitSlug(b.repo))
	var missing []string
	for _, s := range scopes {
		err := rc.ProbeScope(ctx, s)
		switch {
		case errors.Is(err, forge.ErrMissingScope):
			missing = append(missing, s)
		case err != nil:
			r.add(CheckToken, subject, Blocking, "scope check failed: "+err.Error(), "check that the forge is reachable, then run disinto doctor again")
			return
		}
	}
	if len(missing) > 0 {
		r.add(CheckToken, subject, Blocking, fmt.Sprintf("authenticates as %s but lacks the scope(s) %s that %s need", me.Login, strings.Join(missing, ", "), strings.Join(b.jobs, ", ")),
			"disinto init --rotate-tokens mints tokens with the scopes each role needs")
		return
	}
	b.ok = true
	r.add(CheckToken, subject, OK, fmt.Sprintf("authenticates as %s with %s (%s)", me.Login, strings.Join(scopes, ", "), strings.Join(b.jobs, ", ")), "")
}

// scopes are the scopes every role of b needs, strongest per kind, in a
// stable order.
func (b *bot) scopes() []string {
	set := map[string]bool{}
	for role := range b.roles {
		for _, s := range provision.TokenScopes(role) {
			set[s] = true
		}
	}
	// A write scope implies its read scope.
	for s := range set {
		if kind, ok := strings.CutPrefix(s, "write:"); ok {
			delete(set, "read:"+kind)
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// splitSlug splits owner/name.
func splitSlug(slug string) (owner, name string) {
	owner, name, _ = strings.Cut(slug, "/")
	return owner, name
}

// adminClient returns a client with the forge admin's credentials from
// env, or nil when it holds none: reading webhooks needs a repository
// admin, which no bot is.
func adminClient(o Options, env config.Env, url string) *forge.Client {
	user := env.Get("FORGE_ADMIN_USER")
	var c *forge.Client
	var err error
	switch {
	case env.Get("FORGE_ADMIN_TOKEN") != "":
		c, err = client(o, url, user, env.Get("FORGE_ADMIN_TOKEN"), "")
	case user != "" && env.Get("FORGE_ADMIN_PASS") != "" && !isPlaceholder(env.Get("FORGE_ADMIN_PASS")):
		c, err = client(o, url, user, "", env.Get("FORGE_ADMIN_PASS"))
	}
	if err != nil {
		return nil
	}
	return c
}

// checkWebhook checks that project p's repository has an active webhook
// calling the daemon. The secret cannot be read back from the forge, so
// the finding says it was not verified.
func checkWebhook(ctx context.Context, r *Report, o Options, env config.Env, p *config.Project) {
	url := o.WebhookURL
	if url == "" {
		url = env.Get("DISINTO_WEBHOOK_URL")
	}
	if url == "" {
		r.add(CheckWebhook, p.Repo, Warning, "not checked: the daemon's webhook URL is unknown; events then wait for the next poll",
			"set DISINTO_WEBHOOK_URL to the URL given to disinto init --webhook-url")
		return
	}
	if env.Get("DISINTO_WEBHOOK_SECRET") == "" {
		r.add(CheckWebhook, p.Repo, Blocking, "DISINTO_WEBHOOK_SECRET is not set, so the daemon cannot verify a delivery",
			"disinto init --webhook-url "+url+" generates it and sets it on the hook")
		return
	}
	admin := adminClient(o, env, p.ForgeURL)
	if admin == nil {
		r.add(CheckWebhook, p.Repo, Warning, "hook to "+url+" not verified: reading webhooks needs the forge admin's credentials (FORGE_ADMIN_TOKEN, or FORGE_ADMIN_USER and FORGE_ADMIN_PASS), which the bots do not have; DISINTO_WEBHOOK_SECRET is set",
			"run disinto doctor with the admin's credentials in the environment to check the hook")
		return
	}
	hooks, err := admin.Repo(splitSlug(p.Repo)).ListWebhooks(ctx)
	if err != nil {
		r.add(CheckWebhook, p.Repo, Blocking, "cannot list the webhooks: "+err.Error(), "check the admin's credentials (FORGE_ADMIN_USER, FORGE_ADMIN_PASS or FORGE_ADMIN_TOKEN)")
		return
	}
	var found *forge.Webhook
	for i := range hooks {
		if hooks[i].URL == url {
			found = &hooks[i]
			break
		}
	}
	switch {
	case found == nil:
		r.add(CheckWebhook, p.Repo, Blocking, "no webhook calls "+url+"; events wait for the next poll", "disinto init --webhook-url "+url)
	case !found.Active:
		r.add(CheckWebhook, p.Repo, Blocking, "the webhook to "+url+" is inactive", "disinto init --webhook-url "+url+" re-activates it")
	default:
		if miss := missingEvents(found.Events); len(miss) > 0 {
			r.add(CheckWebhook, p.Repo, Warning, fmt.Sprintf("the webhook to %s does not send %s", url, strings.Join(miss, ", ")), "disinto init --webhook-url "+url+" --rotate-tokens sets its events again")
			return
		}
		r.add(CheckWebhook, p.Repo, OK, "active hook to "+url+" with the daemon's events; its secret cannot be read back from the forge and was not verified", "")
	}
}

// missingEvents lists the events the daemon needs that a hook lacks.
func missingEvents(have []string) []string {
	set := map[string]bool{}
	for _, e := range have {
		set[e] = true
	}
	var out []string
	for _, e := range provision.WebhookEvents {
		if !set[e] {
			out = append(out, e)
		}
	}
	return out
}

// checkProtection checks project p's primary branch as disinto init
// protects it, as the dev and review bots see it: protected, approvals
// required, no bot pushes, dev-bot merges and review-bot does not.
func checkProtection(ctx context.Context, r *Report, o Options, p *config.Project, bots []*bot) {
	subject := p.Repo + "@" + p.PrimaryBranch
	var dev, review *bot
	for _, b := range bots {
		if b.forgeURL == p.ForgeURL && b.ok {
			if b.roles[config.RoleDev] && !b.Fallback && dev == nil {
				dev = b
			}
			if b.roles[config.RoleReview] && review == nil {
				review = b
			}
		}
	}
	if dev == nil {
		r.add(CheckProtection, subject, Warning, "not checked: no dev bot token passed its checks", "")
		return
	}
	var problems []string
	seen, err := branchAccess(ctx, o, dev, p)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		r.add(CheckProtection, subject, Warning, "the branch does not exist yet (an empty repository); the rule applies once it is pushed", "push the code, or give disinto init --source")
		return
	case err != nil:
		r.add(CheckProtection, subject, Blocking, "cannot read the branch: "+err.Error(), "check that the forge is reachable, then run disinto doctor again")
		return
	case !seen.Protected:
		r.add(CheckProtection, subject, Blocking, "the branch is not protected: any bot can push to it and merge unreviewed", fixInit)
		return
	}
	if seen.RequiredApprovals < 1 {
		problems = append(problems, "no approval is required")
	}
	if seen.UserCanPush {
		problems = append(problems, dev.me+" may push to it directly")
	}
	if !seen.UserCanMerge {
		problems = append(problems, dev.me+" may not merge")
	}
	if review != nil && review != dev {
		rs, err := branchAccess(ctx, o, review, p)
		if err != nil {
			problems = append(problems, "the review bot cannot read it: "+err.Error())
		} else {
			if rs.UserCanPush {
				problems = append(problems, review.me+" may push to it directly")
			}
			if rs.UserCanMerge {
				problems = append(problems, review.me+" may merge")
			}
		}
	}
	if len(problems) > 0 {
		r.add(CheckProtection, subject, Blocking, "not protected as disinto init provisions it: "+strings.Join(problems, "; "), fixInit)
		return
	}
	r.add(CheckProtection, subject, OK, fmt.Sprintf("protected: %d approval(s) required, %s merges, no bot pushes", seen.RequiredApprovals, dev.me), "")
}

// branchAccess reads p's primary branch as bot b.
func branchAccess(ctx context.Context, o Options, b *bot, p *config.Project) (forge.BranchAccess, error) {
	c, err := client(o, b.forgeURL, b.User, b.Token, "")
	if err != nil {
		return forge.BranchAccess{}, err
	}
	return c.Repo(splitSlug(p.Repo)).BranchAccess(ctx, p.PrimaryBranch)
}

// asProblems reports whether err holds configuration problems.
func asProblems(err error, ps *config.Problems) bool { return errors.As(err, ps) }

// sortStrings sorts s in place.
func sortStrings(s []string) { sort.Strings(s) }
