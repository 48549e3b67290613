package gardener

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/git"
)

// AGENTS.md upkeep (spec 30 §6, §13.14): which files are stale is
// computed here, the model rewrites their prose, and the result is
// verified mechanically before its watermark moves.
const (
	agentsFile = "AGENTS.md"
	rootLimit  = 200
	// maxScan bounds what verification reads to find a cited name.
	maxScan = 4 << 20
)

var (
	watermarkRe = regexp.MustCompile(`^<!-- last-reviewed: ([0-9a-f]{40}) -->\s*$`)
	backtickRe  = regexp.MustCompile("`([^`\\s]+)`")
	fileLikeRe  = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)
	extRe       = regexp.MustCompile(`\.(sh|go|py|toml|md|json|ya?ml|js|ts|txt|mod|sum)$`)
	funcRe      = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.]*)\(\)$`)
)

// watermark returns the commit line 1 of an AGENTS.md names, "" when it
// has none.
func watermark(content string) string {
	first, _, _ := strings.Cut(content, "\n")
	if m := watermarkRe.FindStringSubmatch(first); m != nil {
		return m[1]
	}
	return ""
}

// setWatermark returns content with line 1 the watermark of sha.
func setWatermark(content, sha string) string {
	if watermark(content) != "" {
		_, content, _ = strings.Cut(content, "\n")
	}
	return fmt.Sprintf("<!-- last-reviewed: %s -->\n%s", sha, content)
}

// docFile is one AGENTS.md of the primary branch and what changed in its
// directory since its watermark.
type docFile struct {
	Path, Dir string
	Content   string
	Mark      string
	Stale     bool
	// New and Deleted are the files of Dir added and removed since Mark.
	New, Deleted []string
}

// inDir reports whether p lies in dir ("" is the repository root).
func inDir(dir, p string) bool { return dir == "" || strings.HasPrefix(p, dir+"/") }

// docs finds every AGENTS.md of tree at base and decides which are stale:
// no watermark, a watermark the clone does not know, or a change in the
// directory since it (the AGENTS.md files themselves excepted).
func docs(ctx context.Context, repo *git.Repo, base string, tree []string) ([]docFile, error) {
	var out []docFile
	for _, p := range tree {
		if path.Base(p) != agentsFile {
			continue
		}
		data, err := repo.ShowFile(ctx, base, p)
		if err != nil {
			return nil, err
		}
		d := docFile{Path: p, Dir: path.Dir(p), Content: string(data), Mark: watermark(string(data))}
		if d.Dir == "." {
			d.Dir = ""
		}
		if d.Mark == "" {
			d.Stale = true
			for _, f := range tree {
				if inDir(d.Dir, f) && path.Base(f) != agentsFile {
					d.New = append(d.New, f)
				}
			}
			out = append(out, d)
			continue
		}
		diff, err := repo.Diff(ctx, repo.Dir(), d.Mark, base)
		if err != nil {
			d.Stale = true // an unknown watermark: review it all
			out = append(out, d)
			continue
		}
		for _, ch := range diffFiles(diff) {
			if !inDir(d.Dir, ch.path) || path.Base(ch.path) == agentsFile {
				continue
			}
			d.Stale = true
			switch ch.kind {
			case "new":
				d.New = append(d.New, ch.path)
			case "deleted":
				d.Deleted = append(d.Deleted, ch.path)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

type fileChange struct{ path, kind string }

// diffFiles lists the files a patch touches, with "new" or "deleted"
// for added and removed ones.
func diffFiles(diff string) []fileChange {
	var out []fileChange
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git a/"):
			rest := strings.TrimPrefix(line, "diff --git a/")
			if i := strings.Index(rest, " b/"); i >= 0 {
				out = append(out, fileChange{path: rest[i+3:]})
			}
		case strings.HasPrefix(line, "new file mode") && len(out) > 0:
			out[len(out)-1].kind = "new"
		case strings.HasPrefix(line, "deleted file mode") && len(out) > 0:
			out[len(out)-1].kind = "deleted"
		}
	}
	return out
}

// lies are the references of an AGENTS.md that do not hold at base: a
// cited path that exists neither beside the file nor from the root, a
// cited function name() defined nowhere in its directory, and for the
// root, more than rootLimit lines.
func lies(ctx context.Context, repo *git.Repo, base string, tree []string, d docFile, content string) ([]string, error) {
	var out []string
	exists := map[string]bool{}
	for _, p := range tree {
		exists[p] = true
		for dir := path.Dir(p); dir != "." && dir != "/"; dir = path.Dir(dir) {
			exists[dir] = true
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, m := range backtickRe.FindAllStringSubmatch(content, -1) {
		tok := m[1]
		if seen[tok] {
			continue
		}
		seen[tok] = true
		if f := funcRe.FindStringSubmatch(tok); f != nil {
			names = append(names, f[1])
			continue
		}
		if !fileLikeRe.MatchString(tok) || (!strings.Contains(tok, "/") && !extRe.MatchString(tok)) {
			continue
		}
		p := strings.TrimSuffix(tok, "/")
		if exists[path.Join(d.Dir, p)] || exists[p] {
			continue
		}
		out = append(out, fmt.Sprintf("`%s` does not exist", tok))
	}
	if len(names) > 0 {
		missing, err := undefined(ctx, repo, base, tree, d.Dir, names)
		if err != nil {
			return nil, err
		}
		for _, n := range missing {
			out = append(out, fmt.Sprintf("`%s()` is defined nowhere under %s", n, dirName(d.Dir)))
		}
	}
	if d.Dir == "" {
		if n := strings.Count(strings.TrimRight(content, "\n"), "\n") + 1; n > rootLimit {
			out = append(out, fmt.Sprintf("%d lines (at most %d)", n, rootLimit))
		}
	}
	sort.Strings(out)
	return out, nil
}

func dirName(dir string) string {
	if dir == "" {
		return "the repository"
	}
	return dir + "/"
}

// undefined returns the names no file under dir defines (a Go func, a
// shell or Python function).
func undefined(ctx context.Context, repo *git.Repo, base string, tree []string, dir string, names []string) ([]string, error) {
	found := map[string]bool{}
	read := 0
	for _, p := range tree {
		if !inDir(dir, p) || path.Base(p) == agentsFile || read > maxScan {
			continue
		}
		data, err := repo.ShowFile(ctx, base, p)
		if err != nil {
			continue
		}
		read += len(data)
		s := string(data)
		for _, n := range names {
			if found[n] {
				continue
			}
			q := regexp.QuoteMeta(n[strings.LastIndex(n, ".")+1:])
			if regexp.MustCompile(`(?m)(func\s+(\([^)]*\)\s*)?` + q + `\(|def\s+` + q + `\(|^\s*(function\s+)?` + q + `\s*\(\))`).MatchString(s) {
				found[n] = true
			}
		}
	}
	var out []string
	for _, n := range names {
		if !found[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// gaps are the files added since the watermark that content does not
// mention: reported, not blocking (a layout need not list every file).
func gaps(d docFile, content string) []string {
	var out []string
	for _, n := range d.New {
		rel := strings.TrimPrefix(n, d.Dir+"/")
		if !strings.Contains(content, rel) && !strings.Contains(content, path.Base(n)) {
			out = append(out, n)
		}
	}
	return out
}
