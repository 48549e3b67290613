package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/trackrecord"
)

// TrackRecordInterval is how often each project's track record is read
// again from the forge: it moves with merges, reverts and reopenings,
// none of which wants a faster answer.
const TrackRecordInterval = time.Hour

// trackRecords keep the track record of each project, as the dev bot
// reads the forge, in the project's state for status and the status page.
type trackRecords []*trackRecordKeeper

type trackRecordKeeper struct {
	t    *trackrecord.Tracker
	file string
	log  zerolog.Logger
}

// newTrackRecords makes the keeper of each project's record; a project
// without a dev bot keeps none.
func newTrackRecords(s *Services, cfg *config.Config, log zerolog.Logger) trackRecords {
	bot, err := cfg.Bot(config.RoleDev)
	if err != nil {
		return nil
	}
	roles := map[string]string{}
	for _, r := range append([]config.Role{config.RoleDev}, config.AllRoles()...) {
		b, err := cfg.Bot(r)
		if err != nil || b.User == "" {
			continue
		}
		if _, seen := roles[strings.ToLower(b.User)]; !seen {
			roles[strings.ToLower(b.User)] = string(r)
		}
	}
	var out trackRecords
	for _, p := range cfg.Projects {
		plog := log.With().Str("project", p.Name).Logger()
		fc, err := s.ForgeAs(p, bot, plog)
		if err != nil {
			plog.Warn().Err(err).Msg("no track record")
			continue
		}
		out = append(out, &trackRecordKeeper{
			t:    trackrecord.New(trackrecord.Options{Project: p.Name, Forge: fc, Primary: p.PrimaryBranch, Roles: roles}),
			file: s.Layout.TrackRecord(p.Name), log: plog,
		})
	}
	return out
}

// run reads every record again every interval until ctx ends.
func (ts trackRecords) run(ctx context.Context, every time.Duration) {
	if len(ts) == 0 {
		return
	}
	repeat(ctx, every, func() {
		for _, k := range ts {
			rec, err := k.t.Compute(ctx, time.Now())
			if err != nil {
				if ctx.Err() == nil {
					k.log.Warn().Err(err).Msg("track record not read")
				}
				continue
			}
			if err := atomicfile.WriteState(k.file, rec); err != nil {
				k.log.Warn().Err(err).Msg("track record not kept")
			}
		}
	})
}

// TrackRecords reads the projects' last track records from the data dir;
// a project whose record was never read is left out.
func TrackRecords(dataDir string, cfg *config.Config) []trackrecord.Record {
	if cfg == nil {
		return nil
	}
	l := datadir.New(dataDir)
	var out []trackrecord.Record
	for _, p := range cfg.Projects {
		rec, ok, err := atomicfile.ReadState[trackrecord.Record](l.TrackRecord(p.Name))
		if err == nil && ok {
			out = append(out, rec)
		}
	}
	return out
}

// writeTrackRecords prints the records: per project, role and level, the
// pull requests merged, reverted or reopened soon after, and closed
// unmerged.
func writeTrackRecords(w io.Writer, recs []trackrecord.Record) {
	if len(recs) == 0 {
		return
	}
	fmt.Fprintf(w, "\ntrack record (%d days; reverted or reopened within %d days of the merge):\n", recs[0].WindowDays, recs[0].RevertDays)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROJECT\tROLE\tLEVEL\tMERGED\tREVERTED\tREOPENED\tCLOSED UNMERGED")
	for _, rec := range recs {
		if len(rec.Rows) == 0 {
			fmt.Fprintf(tw, "  %s\t-\t-\t0\t0\t0\t0\n", rec.Project)
		}
		for _, r := range rec.Rows {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\n", rec.Project, r.Role, orDash(r.Level), r.Merged, r.Reverted, r.Reopened, r.ClosedUnmerged)
		}
	}
	_ = tw.Flush()
	for _, rec := range recs {
		if len(rec.Reverted) > 0 {
			fmt.Fprintf(w, "  %s reverted: %s\n", rec.Project, prList(rec.Reverted))
		}
		if len(rec.Reopened) > 0 {
			fmt.Fprintf(w, "  %s issue reopened: %s\n", rec.Project, prList(rec.Reopened))
		}
	}
}

// prList names pull requests: "PR #3, PR #7".
func prList(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprintf("PR #%d", n)
	}
	return strings.Join(s, ", ")
}
