package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// EvidenceCheck is how often the daemon looks whether a project's
// evidence is due. It is written once a UTC day, at the first look of
// the day, which also completes the day before.
const EvidenceCheck = time.Hour

// evidenceState is what the daemon keeps of a project's evidence: the
// UTC day it was last written for.
type evidenceState struct {
	Date   string `json:"date"`
	Commit string `json:"commit,omitempty"`
}

// evidenceWriter writes one project's evidence into its ops repository
// (lib/evidence) as the planner bot, which the ops primary branch's
// protection lets commit directly (the planner reads what it writes).
type evidenceWriter struct {
	project string
	repo    *ops.Repo
	o       evidence.Options
	file    string
	now     func() time.Time
	log     zerolog.Logger
}

// evidenceWriters are the writers of the projects with an ops
// repository.
type evidenceWriters []*evidenceWriter

// newEvidence makes the evidence writer of each project with an ops
// repository, acting as the planner bot (its checkout of the ops
// repository, shared with the planner) and counting the review bot's
// reviews; with the edge on (DISINTO_EDGE_URL) and its access log named
// (DISINTO_EDGE_ACCESS_LOG), the engagement too. A planner bot that
// cannot push writes none.
func newEvidence(s *Services, cfg *config.Config, log zerolog.Logger) evidenceWriters {
	bot, err := cfg.Bot(config.RolePlanner)
	if err != nil || bot.Password == "" {
		log.Info().Msg("no planner bot that can push: no evidence is written")
		return nil
	}
	reviewer := ""
	if rb, err := cfg.Bot(config.RoleReview); err == nil {
		reviewer = rb.User
	}
	accessLog := ""
	var routes []edge.Route
	if cfg.Env.Get(edge.URLEnv) != "" {
		accessLog = cfg.Env.Get(edge.AccessLogEnv)
		routes = edgeConfigOf(cfg.Env).Routes()
	}
	var out evidenceWriters
	for _, p := range cfg.Projects {
		if p.OpsRepo == "" {
			continue
		}
		plog := log.With().Str("project", p.Name).Logger()
		fc, err := s.ForgeAs(p, bot, plog)
		if err != nil {
			plog.Warn().Err(err).Msg("no evidence")
			continue
		}
		g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: bot.User, Password: bot.Password},
			Redactor: s.Redactor})
		name, email := git.Identity(bot.User)
		repo := s.Checkouts.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
			Dir: s.Layout.Ops(p.Name, bot.User), Name: name, Email: email})
		out = append(out, &evidenceWriter{project: p.Name, repo: repo,
			o:    evidence.Options{Forge: fc, Reviewer: reviewer, AccessLog: accessLog, Routes: routes},
			file: filepath.Join(s.Layout.State(p.Name), "evidence.json"), now: time.Now, log: plog})
	}
	return out
}

// run writes the evidence that is due every interval until ctx ends.
func (ws evidenceWriters) run(ctx context.Context, every time.Duration) {
	if len(ws) == 0 {
		return
	}
	repeat(ctx, every, func() {
		for _, w := range ws {
			if err := w.tick(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn().Str("error", err.Error()).Msg("evidence not written; tried again at the next look")
			}
		}
	})
}

// tick writes the project's evidence unless it was written for today
// already; it reports whether it wrote.
func (w *evidenceWriter) tick(ctx context.Context) error {
	today := evidence.DateOf(w.now())
	st, _, err := atomicfile.ReadState[evidenceState](w.file)
	if err != nil {
		return err
	}
	if st.Date == today {
		return nil
	}
	o := w.o
	o.Now = w.now
	res, err := evidence.Write(ctx, w.repo, o)
	if errors.Is(err, ops.ErrProtected) {
		// Said at every look until the protection lets the bot push.
		return errors.New("the ops primary branch refuses the planner bot's commits: give it push access (disinto init does)")
	}
	if err != nil {
		return err
	}
	if w.o.AccessLog != "" && !res.Engagement {
		w.log.Info().Str("access_log", w.o.AccessLog).Msg("the edge's access log is missing: no engagement evidence today")
	}
	if res.Skipped > 0 {
		w.log.Info().Int("lines", res.Skipped).Msg("access log lines that were no access entry, skipped")
	}
	if res.Commit != "" {
		w.log.Info().Str("date", today).Str("commit", res.Commit).Msg("evidence written")
	}
	return atomicfile.WriteState(w.file, evidenceState{Date: today, Commit: res.Commit})
}
