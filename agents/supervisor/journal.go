package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// JournalDir is the supervisor's journal in the ops repository (spec 00
// §3): one file per UTC day, one section per run.
const JournalDir = "journal/supervisor"

// journal appends the run's entry to the day's file in the ops
// repository, or, when that cannot be done, to the same file under the
// local state dir (degraded mode, spec 60 §5), and returns where it went.
func (a *Agent) journal(ctx context.Context, snap *Snapshot, out Outcome, analysis string) string {
	day := out.At.UTC().Format("2006-01-02")
	entry := renderEntry(snap, out, analysis)
	path := JournalDir + "/" + day + ".md"
	if a.o.Journal != nil {
		_, err := a.o.Journal.Commit(ctx, "supervisor: journal "+out.At.UTC().Format("2006-01-02 15:04"), func(f ops.Files) ([]git.FileChange, error) {
			old, err := f.Read(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			return []git.FileChange{{Path: path, Content: appendEntry(old, day, entry)}}, nil
		})
		if err == nil {
			return path
		}
		a.o.Log.Warn().Err(err).Msg("journal to the ops repository failed; journalling locally")
	}
	local := filepath.Join(a.o.StateDir, "supervisor-journal", day+".md")
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		a.o.Log.Error().Err(err).Msg("local journal")
		return ""
	}
	old, _ := os.ReadFile(local)
	if err := os.WriteFile(local, appendEntry(old, day, entry), 0o600); err != nil {
		a.o.Log.Error().Err(err).Msg("local journal")
		return ""
	}
	return local
}

// appendEntry adds entry to a day file, starting it with its heading.
func appendEntry(old []byte, day, entry string) []byte {
	s := string(old)
	if s == "" {
		s = "# Supervisor journal " + day + "\n"
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return []byte(s + "\n" + entry)
}

// renderEntry renders one run's section (spec 60 §4.1 step 3), from the
// snapshot and the actions actually taken.
func renderEntry(snap *Snapshot, out Outcome, analysis string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Supervisor run — %s UTC\n\n### Health status\n\n", out.At.UTC().Format("15:04"))
	if why, bad := snap.Unobserved[SourceHost]; bad {
		fmt.Fprintf(&b, "- Memory: not observable (%s)\n", why)
	} else {
		fmt.Fprintf(&b, "- Memory: %d MB available of %d MB, swap %d MB used\n", snap.Memory.AvailableMB, snap.Memory.TotalMB, snap.Memory.SwapUsedMB)
	}
	for _, d := range snap.Disks {
		fmt.Fprintf(&b, "- Disk: %s `%s` %.0f%% (%s of %s)\n", d.What, d.Path, d.Pct, bytesText(d.Used), bytesText(d.Size))
	}
	if why, bad := snap.Unobserved[SourceDocker]; bad {
		fmt.Fprintf(&b, "- Containers: not observable (%s)\n", why)
	} else {
		running := 0
		for _, c := range snap.Containers {
			if c.Running() {
				running++
			}
		}
		fmt.Fprintf(&b, "- Containers: %d watched, %d running\n", len(snap.Containers), running)
	}
	if why, bad := snap.Unobserved[SourceForge]; bad {
		fmt.Fprintf(&b, "- Forge: unreachable (%s)\n", why)
	} else {
		fmt.Fprintf(&b, "- Forge: %d open pull requests, %d open incidents\n", len(snap.PRs), len(snap.Incidents))
	}
	fmt.Fprintf(&b, "- Agents: %d running\n", len(snap.Agents))
	b.WriteString("\n### Findings\n\n")
	if len(out.Findings) == 0 {
		b.WriteString("- No issues found\n")
	}
	for _, f := range out.Findings {
		fmt.Fprintf(&b, "- [%s] %s", f.Severity, f.Summary)
		if f.Incident != 0 {
			fmt.Fprintf(&b, " — incident #%d", f.Incident)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n### Actions taken\n\n")
	if len(out.Actions) == 0 {
		b.WriteString("No actions needed\n")
	}
	for _, a := range out.Actions {
		fmt.Fprintf(&b, "- %s", a.What)
		if a.Err != "" {
			fmt.Fprintf(&b, " (failed: %s)", oneLine(a.Err))
		}
		b.WriteString("\n")
	}
	if analysis != "" {
		b.WriteString("\n### Analysis\n\n" + oneLine(analysis) + "\n")
	}
	return b.String()
}

// oneLine folds s onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
