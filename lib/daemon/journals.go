package daemon

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/lib/ops"
)

// journalMaxWait caps the backoff of a journal whose .profile repository
// keeps refusing.
const journalMaxWait = 10 * time.Minute

// journals are the bots' journals in their .profile repositories, one per
// forge and bot, fed from the run records.
type journals struct {
	mu sync.Mutex
	// s are the services the journals were made with; nil before the
	// first.
	s     *Services
	byKey map[string]*memory.Journal
	// route maps project/role to the key of its journal.
	route map[string]string
	// syncLog receives the syncs' notes.
	syncLog zerolog.Logger
}

// add makes the journal of the bot acting for role on p.
func (js *journals) add(s *Services, p *config.Project, role config.Role, log zerolog.Logger) {
	bot, err := s.Config.Bot(role)
	if err != nil || bot.Password == "" {
		return // no bot, or one that cannot push
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.byKey == nil {
		js.byKey, js.route = map[string]*memory.Journal{}, map[string]string{}
	}
	if js.s == nil {
		js.s = s
		s.mem.mu.Lock()
		s.mem.journals = js
		s.mem.mu.Unlock()
	}
	key := p.ForgeURL + "\x00" + bot.User
	js.route[p.Name+"/"+string(role)] = key
	js.syncLog = log
	if js.byKey[key] != nil {
		return
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: bot.User, Password: bot.Password},
		Redactor: s.Redactor})
	name, email := git.Identity(bot.User)
	repo := ops.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + bot.User + "/.profile.git", Dir: s.Layout.Profile(bot.User),
		Name: name, Email: email})
	o := memory.Options{Bot: bot.User, QueueFile: s.Layout.JournalQueue(bot.User), Log: log, Repo: repo,
		Exists: profileExists(s, p, bot, log)}
	if f, err := s.Formula(p, "digest", log); err != nil {
		log.Warn().Err(err).Str("bot", bot.User).Msg("no digest formula: the journal is not digested into lessons")
	} else {
		settings := p.Roles[role]
		o.Digester = memory.NewDigester(memory.DigestOptions{Bot: bot.User, Repo: repo, Formula: f, Claude: s.Claude,
			Sandbox: s.Sandbox, Backend: settings.Backend, Redactor: s.Redactor, Log: log})
	}
	js.byKey[key] = memory.New(o)
}

// profileExists asks the forge, as bot, whether bot's .profile repository
// exists; an answer other than "not found" counts as yes.
func profileExists(s *Services, p *config.Project, bot config.Bot, log zerolog.Logger) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: bot.Token, User: bot.User, HTTPClient: s.HTTP, Logger: log,
			Redactor: s.Redactor, Instance: s.Instance})
		if err != nil {
			return false, err
		}
		_, err = fc.Repo(bot.User, ".profile").Get(ctx)
		switch {
		case errors.Is(err, forge.ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

// all returns every journal.
func (js *journals) all() []*memory.Journal {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*memory.Journal, 0, len(js.byKey))
	for _, j := range js.byKey {
		out = append(out, j)
	}
	return out
}

// journalFor implements memory.Recorder.For.
func (js *journals) journalFor(project, role string) *memory.Journal {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byKey[js.route[project+"/"+role]]
}

// run drains every journal until ctx ends, and keeps the .profile and
// ops checkouts fetched (so lessons and formula overrides take effect
// without a restart); it returns when all stopped.
func (js *journals) run(ctx context.Context) {
	js.mu.Lock()
	s := js.s
	js.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range js.all() {
		wg.Go(func() { j.Run(ctx, journalMaxWait) })
	}
	if s != nil {
		wg.Go(func() { s.syncLoop(ctx, s.Config.Projects, js.log()) })
	}
	wg.Wait()
}

// log is the logger of the first journal's daemon log, for the syncs.
func (js *journals) log() zerolog.Logger {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.syncLog
}

// status lists the journals' state, by bot.
func (js *journals) status() []memory.Status {
	js.mu.Lock()
	all := make([]*memory.Journal, 0, len(js.byKey))
	for _, j := range js.byKey {
		all = append(all, j)
	}
	js.mu.Unlock()
	out := make([]memory.Status, 0, len(all))
	for _, j := range all {
		out = append(out, j.Status())
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Bot < out[k].Bot })
	return out
}
