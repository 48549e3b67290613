package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, installed by tests/setup/chromium.sh
// (DISINTO_CHROMIUM names another).
func chromiumPath() string {
	if p := os.Getenv("DISINTO_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// browse loads url in headless chromium and returns the page's rendered
// text, after saving a screenshot of it (phone width) under the test's
// output directory.
func browse(t *testing.T, url string, width int64) string {
	t.Helper()
	bin := chromiumPath()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("chromium not installed (%v): run tests/setup/chromium.sh", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.WindowSize(int(width), 900))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#in-flight"))); err != nil {
		t.Fatalf("load %s in chromium: %v", url, err)
	}
	text, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("read the text of %s: %v", url, err)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", url, err)
	}
	out := filepath.Join(testOutputDir(t), "status-page.png")
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("status page screenshot: %s", out)
	return text
}

// testOutputDir is where a test keeps files for people to look at:
// $DISINTO_TEST_OUTPUT, else tests/e2e/testdata/output (ignored by git).
func testOutputDir(t *testing.T) string {
	dir := os.Getenv("DISINTO_TEST_OUTPUT")
	if dir == "" {
		dir = filepath.Join("testdata", "output")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkStatusPage loads the daemon's status page in a real browser at
// phone width and checks that it shows the runs the system test made.
func checkStatusPage(t *testing.T, base string, wants ...string) {
	t.Helper()
	text := browse(t, base+"/", 390)
	for _, want := range append([]string{"Agents", "In flight", "Recent runs", "cost today"}, wants...) {
		if !strings.Contains(text, want) {
			t.Errorf("the status page lacks %q:\n%s", want, text)
		}
	}
}
