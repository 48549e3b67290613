package main

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
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
	mu    sync.Mutex
	byKey map[string]*memory.Journal
	// route maps project/role to the key of its journal.
	route map[string]string
}

// add makes the journal of the bot acting for role on p.
func (js *journals) add(s *services, p *config.Project, role config.Role, log zerolog.Logger) {
	bot, err := s.cfg.Bot(role)
	if err != nil || bot.Password == "" {
		return // no bot, or one that cannot push
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.byKey == nil {
		js.byKey, js.route = map[string]*memory.Journal{}, map[string]string{}
	}
	key := p.ForgeURL + "\x00" + bot.User
	js.route[p.Name+"/"+string(role)] = key
	if js.byKey[key] != nil {
		return
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: bot.User, Password: bot.Password},
		Redactor: s.redactor})
	name, email := git.Identity(bot.User)
	dir := filepath.Join(s.dataDir, "memory", bot.User)
	js.byKey[key] = memory.New(memory.Options{Bot: bot.User, QueueFile: filepath.Join(dir, "journal.queue"), Log: log,
		Repo: ops.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + bot.User + "/.profile.git", Dir: filepath.Join(dir, "profile"),
			Name: name, Email: email})})
}

// journalFor implements memory.Recorder.For.
func (js *journals) journalFor(project, role string) *memory.Journal {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byKey[js.route[project+"/"+role]]
}

// run drains every journal until ctx ends; it returns when all stopped.
func (js *journals) run(ctx context.Context) {
	js.mu.Lock()
	all := make([]*memory.Journal, 0, len(js.byKey))
	for _, j := range js.byKey {
		all = append(all, j)
	}
	js.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range all {
		wg.Go(func() { j.Run(ctx, journalMaxWait) })
	}
	wg.Wait()
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
