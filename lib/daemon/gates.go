package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// tokenCheckTimeout bounds one check of a bot token.
const tokenCheckTimeout = 15 * time.Second

// gate holds back the jobs of one bot identity while the forge rejects
// its token: checked at start and whenever a tick meets a 401, re-checked
// at each run of its jobs, and opened again as soon as the token
// authenticates. Closing and opening are each said once.
type gate struct {
	forgeURL string
	bot      config.Bot
	http     *http.Client
	log      zerolog.Logger

	mu     sync.Mutex
	closed bool
	reason string
	since  time.Time
	roles  map[string]bool // project/role of the jobs it holds
}

// DisabledRole is a job held back by a closed gate, for status.
type DisabledRole struct {
	Project string    `json:"project"`
	Role    string    `json:"role"`
	Reason  string    `json:"reason"`
	Since   time.Time `json:"since"`
}

// gates are the daemon's gates, one per forge and bot login.
type gates struct {
	mu sync.Mutex
	m  map[string]*gate
}

// of returns the gate of bot on forgeURL, registering the job
// project/role with it.
func (gs *gates) of(forgeURL string, bot config.Bot, job string, hc *http.Client, log zerolog.Logger) *gate {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.m == nil {
		gs.m = map[string]*gate{}
	}
	k := forgeURL + "\x00" + bot.User + "\x00" + bot.TokenVar
	g := gs.m[k]
	if g == nil {
		g = &gate{forgeURL: forgeURL, bot: bot, http: hc, log: log, roles: map[string]bool{}}
		gs.m[k] = g
	}
	g.roles[job] = true
	return g
}

// all returns every gate, in a stable order.
func (gs *gates) all() []*gate {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	out := make([]*gate, 0, len(gs.m))
	for _, g := range gs.m {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bot.User+out[i].forgeURL < out[j].bot.User+out[j].forgeURL })
	return out
}

// disabled lists the jobs held back, for status and /readyz.
func (gs *gates) disabled() []DisabledRole {
	var out []DisabledRole
	for _, g := range gs.all() {
		g.mu.Lock()
		if g.closed {
			for job := range g.roles {
				p, r, _ := strings.Cut(job, "/")
				out = append(out, DisabledRole{Project: p, Role: r, Reason: g.reason, Since: g.since})
			}
		}
		g.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Project+out[i].Role < out[j].Project+out[j].Role })
	return out
}

// check asks the forge who the token belongs to. A rejected token closes
// the gate; an accepted one opens it; any other failure (the forge is
// down) leaves it as it is and is returned.
func (g *gate) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, tokenCheckTimeout)
	defer cancel()
	c, err := forge.New(forge.Options{URL: g.forgeURL, Token: g.bot.Token, User: g.bot.User, HTTPClient: g.http, MaxRetries: -1})
	if err != nil {
		return err
	}
	u, err := c.Me(ctx)
	switch {
	case errors.Is(err, forge.ErrUnauthorized):
		g.close(fmt.Sprintf("%s rejected by %s", g.bot.TokenVar, g.forgeURL))
		return nil
	case err != nil:
		return err
	case u.Login != "" && !strings.EqualFold(u.Login, g.bot.User):
		// Not a failure of the token: the operator named another user.
		g.log.Warn().Str("token", g.bot.TokenVar).Str("want", g.bot.User).Str("got", u.Login).
			Msg("bot token belongs to another user than configured")
	}
	g.open()
	return nil
}

// close holds the gate's jobs back and says so once.
func (g *gate) close(reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed, g.reason, g.since = true, reason, time.Now()
	roles := make([]string, 0, len(g.roles))
	for r := range g.roles {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	g.log.Error().Str("bot", g.bot.User).Strs("jobs", roles).
		Msgf("%s: the bot's token is rejected; its jobs are disabled until it authenticates (fix the token; the daemon re-checks it at each run)", reason)
}

// open lets the gate's jobs run again, saying so if it was closed.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		return
	}
	g.closed, g.reason = false, ""
	g.log.Info().Str("bot", g.bot.User).Msgf("%s authenticates again; its jobs run again", g.bot.TokenVar)
}

// isClosed reports whether the gate holds its jobs back.
func (g *gate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}
