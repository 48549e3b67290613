package reproduce

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/runner/runnertest"
)

// cartApp is the tiny web app under test: its cart page shows a NaN total
// for a quantity that is not a number, the bug the report describes.
func cartApp() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/cart", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Cart</title></head><body>
<h1>Your cart</h1><p>Quantity: <span id="qty">%s</span></p>
<p id="total"></p>
<script>
const q = document.getElementById("qty").textContent;
document.getElementById("total").textContent = "Total: " + (parseInt(q, 10) * 3) + " EUR";
</script></body></html>`, r.URL.Query().Get("qty"))
	})
	return mux
}

// TestSidecarReproducesABugReportInTheBrowser is the track end to end: a
// bug report against the tiny web app is reproduced by the scripted model
// driving the real Playwright MCP server (Debian's chromium) inside the
// reproduce sidecar on the real Docker engine, with the real claude CLI;
// the issue ends with the outcome labels, the screenshot as an attachment
// and a filed fix issue.
func TestSidecarReproducesABugReportInTheBrowser(t *testing.T) {
	cli := engine(t)
	image := reproduceImage(t, cli)
	app := runnertest.ServeOnBridge(t, cli, cartApp())
	const scenario = "sidecar-cart-nan"
	model, err := claudetest.NewServer(claudetest.Scenario{Name: scenario, Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Block{Type: "tool_use", Tool: "mcp__playwright__browser_navigate",
			Input: map[string]any{"url": app + "/cart?qty=abc"}}),
		claudetest.Tools(claudetest.Block{Type: "tool_use", Tool: "mcp__playwright__browser_take_screenshot",
			Input: map[string]any{"filename": "issue-step-1.png", "type": "png"}}),
		claudetest.Text("The total reads NaN.\n\n```json\n" + `{"outcome": "reproduced", ` +
			`"root_cause": "the cart multiplies parseInt of a non-numeric quantity: NaN", ` +
			`"findings": "Opened /cart?qty=abc: the total shows NaN EUR.", "screenshots": ["issue-step-1.png"]}` + "\n```"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	model.Logf = t.Logf
	modelURL := runnertest.ServeOnBridge(t, cli, model)

	g := newRig(t)
	report := g.issue("Cart total shows NaN", "scenario: "+scenario+"\n\nOpen "+app+"/cart?qty=abc: the total is NaN.",
		forge.LabelBugReport)
	run := fmt.Sprintf("%d-%d", report.Number, time.Now().UnixNano())
	r, err := runner.New(runner.Options{Engine: cli, Image: image, LogLimit: 48 << 20,
		Labels: map[string]string{testLabel: run}})
	if err != nil {
		t.Fatal(err)
	}
	a := g.agent(r, nil)
	a.o.Env = map[string]string{"ANTHROPIC_BASE_URL": modelURL}
	a.o.Network = "bridge"
	a.o.MaxTurns = 10

	cands, err := a.Candidates(g.ctx())
	if err != nil || len(cands) != 1 || cands[0].Mode != ModeReproduce {
		t.Fatalf("candidates %+v, %v: want #%d in mode reproduce", cands, err, report.Number)
	}
	res := a.Work(g.ctx(), cands[0])
	if res.Err != nil || res.Applied == nil {
		t.Fatalf("run: %v (applied %v)", res.Err, res.Applied)
	}
	if left := listContainers(t, cli, run); len(left) > 0 {
		t.Errorf("sidecar containers left behind: %v", left)
	}

	// The real browser loaded the app: the navigation's page snapshot,
	// as the MCP server returned it to the model, shows the bug.
	var seen strings.Builder
	for _, rq := range model.MessageRequests(scenario) {
		seen.WriteString(strings.Join(rq.ToolResults, "\n"))
	}
	if !strings.Contains(seen.String(), "Total: NaN EUR") {
		t.Errorf("the model never saw the page's NaN total through the browser; tool results:\n%s", seen.String())
	}
	g.wantLabels(report.Number, forge.LabelBugReport, forge.LabelReproduced, forge.LabelInProgress)

	atts, err := g.repo.ListIssueAttachments(g.ctx(), report.Number)
	if err != nil || len(atts) != 1 || atts[0].Name != "issue-step-1.png" {
		t.Fatalf("attachments %+v, %v: want the screenshot", atts, err)
	}
	png := download(t, atts[0].URL)
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
		t.Errorf("the attachment is not a screenshot (%d bytes, starts %q)", len(png), png[:min(8, len(png))])
	}
	fixes := g.fixesOf(report.Number)
	if len(fixes) != 1 || !strings.HasPrefix(fixes[0].Title, "fix: Cart total shows NaN") || !fixes[0].HasLabel(forge.LabelBacklog) {
		t.Fatalf("fix issues %+v: want one backlog issue titled fix: Cart total shows NaN", fixes)
	}
	cs := g.comments(report.Number)
	if len(cs) != 1 || !strings.Contains(cs[0], "Reproduced, with an obvious cause") || !strings.Contains(cs[0], "issue-step-1.png") ||
		!strings.Contains(cs[0], fmt.Sprintf("#%d", fixes[0].Number)) {
		t.Errorf("comments %q: want one with the header, the screenshot and the fix issue", cs)
	}
	// Settled: the next cycle finds nothing to do for it.
	if cands, _ := a.Candidates(g.ctx()); len(cands) != 0 {
		t.Errorf("candidates after the run: %+v", cands)
	}
}

// download fetches a public attachment URL.
func download(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test's short fetch
	if err != nil {
		t.Fatalf("download %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download %s: %s", url, resp.Status)
	}
	return b
}
