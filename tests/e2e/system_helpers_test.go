package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/ledger"
)

// httpGet returns the body of a GET on url.
func httpGet(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// sourceRepo is a local repository with one commit on main, the code
// `disinto init --source` pushes into the empty project repository.
func sourceRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "source")
	runGit(t, "", "init", "-q", "-b", "main", dir)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# widgets\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "README.md")
	runGit(t, dir, "-c", "user.name=someone", "-c", "user.email=someone@example.invalid", "commit", "-q", "-m", "initial")
	return dir
}

// filesContaining lists the files under root whose content contains any
// of secrets, naming the secret's variable.
func filesContaining(t testing.TB, root string, secrets map[string]string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for name, v := range secrets {
			if bytes.Contains(data, []byte(v)) {
				hits = append(hits, fmt.Sprintf("%s holds %s", path, name))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// countRuns counts the runs of role with reason ("" for any).
func countRuns(recs []ledger.Record, role string, reason ledger.Reason) int {
	n := 0
	for _, r := range recs {
		if r.Role == role && (reason == "" || r.Reason == reason) {
			n++
		}
	}
	return n
}

// metricSum adds the samples of metric whose labels match the regular
// expression labels ("" matches all).
func metricSum(text, metric, labels string) float64 {
	re := regexp.MustCompile(labels)
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		if labels != "" && !re.MatchString(line) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
