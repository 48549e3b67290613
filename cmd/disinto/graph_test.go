package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/ops"
)

// TestGraphCommand runs disinto graph against the real forge: a project
// with an ops repository holding the tree, and issues in a cycle. The
// ops repository is cloned read-only; once the daemon's checkout exists
// it is read as that checkout last fetched it.
func TestGraphCommand(t *testing.T) {
	srv := forgetest.Start(t)
	p := srv.NewProject(t, "widgets")
	ctx := t.Context()
	opsRepo := srv.NewRepo(t, p.Owner, "widgets-ops")
	if err := opsRepo.CreateFiles(ctx, "main", "tree", []forge.NewFile{{Path: "prerequisites.md",
		Content: []byte("## Objective: Launch (#3)\n- [x] Site live (`docker-compose.yml`)\nStatus: DONE\n")}}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"blocks #2", "blocks #1", "launch"} {
		if _, err := p.Repo.CreateIssue(ctx, forge.NewIssue{Title: "issue", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	writeFile(t, filepath.Join(dir, "projects", "widgets.toml"), "name = \"widgets\"\nrepo = \""+p.Repo.Slug()+
		"\"\nops_repo = \""+opsRepo.Slug()+"\"\nforge_url = \""+srv.URL+"\"\n")
	writeFile(t, filepath.Join(dir, "env"), "FORGE_TOKEN="+p.Dev.Token+"\nFORGE_PASS="+p.Dev.Password+
		"\nFORGE_BOT_USER_DEV="+p.Dev.Login+"\n")
	common := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "env"), "--data-dir", data}
	graphJSON := func(extra ...string) graph.Report {
		t.Helper()
		code, out, errOut := runCLI(t, nil, append(append([]string{"graph", "--project", "widgets", "--json"}, common...), extra...)...)
		if code != exitOK {
			t.Fatalf("graph --json: exit %d, stderr %q", code, errOut)
		}
		var r graph.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		return r
	}

	r := graphJSON("--changed", "docker-compose.yml")
	if r.Sources.Forge != graph.SourceOK || r.Sources.Tree != graph.DefaultTreePath || len(r.Sources.Errors) != 0 {
		t.Errorf("sources %+v", r.Sources)
	}
	if r.CyclesTotal != 1 || !slices.Equal(r.Cycles[0].Members, []string{"issue:1", "issue:2"}) {
		t.Errorf("cycles %+v", r.Cycles)
	}
	if r.Affected == nil || !slices.Equal(r.Affected.Objectives, []string{"objective:launch"}) || len(r.Affected.Alerts) != 1 {
		t.Errorf("affected %+v", r.Affected)
	}
	if strings.Contains(strings.Join(r.Sources.Errors, " "), p.Dev.Token) {
		t.Error("token in the report")
	}

	// The daemon's checkout, made before the tree changes, is what is read.
	g := git.New(git.Options{Credentials: &git.Credentials{URL: srv.URL, Username: p.Dev.Login, Password: p.Dev.Password}})
	name, email := git.Identity(p.Dev.Login)
	checkout := ops.Open(ops.Options{Git: g, URL: srv.URL + "/" + opsRepo.Slug() + ".git", Dir: datadir.New(data).Ops("widgets", p.Dev.Login), Name: name, Email: email})
	if _, err := checkout.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := opsRepo.GetFile(ctx, "prerequisites.md", "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opsRepo.PutFile(ctx, forge.FileChange{Path: "prerequisites.md", SHA: old.SHA, Branch: "main", Message: "rename",
		Content: []byte("## Objective: Renamed\nStatus: READY\n")}); err != nil {
		t.Fatal(err)
	}
	if r := graphJSON(); len(r.Objectives) != 1 || r.Objectives[0].ID != "objective:launch" {
		t.Errorf("daemon checkout not read as last fetched: %+v", r.Objectives)
	}

	// The review prompt's objectives come from the daemon's checkout too.
	opsOf := func(project string) *ops.Repo {
		if project == "widgets" {
			return checkout
		}
		return nil
	}
	proj := &config.Project{Name: "widgets", Repo: p.Repo.Slug(), OpsRepo: opsRepo.Slug(), ForgeURL: srv.URL, PrimaryBranch: "main"}
	objectives := graphObjectives(opsOf, proj, p.Repo, zerolog.Nop())
	if got := objectives(ctx, []string{"docker-compose.yml"}); !strings.Contains(got, "Affected objectives: objective:launch\n") ||
		!strings.Contains(got, graph.AlertDone) {
		t.Errorf("review objectives %q", got)
	}
	if got := objectives(ctx, []string{"README.md"}); got != "" {
		t.Errorf("an unrelated change: %q", got)
	}
	if got := graphObjectives(func(string) *ops.Repo { return nil }, proj, p.Repo, zerolog.Nop())(ctx, []string{"docker-compose.yml"}); got != "" {
		t.Errorf("no ops checkout: %q", got)
	}

	code, out, errOut := runCLI(t, nil, append([]string{"graph", "--project", "widgets"}, common...)...)
	if code != exitOK || !strings.Contains(out, "Sources: forge ok, tree prerequisites.md") || !strings.Contains(out, "issue:1 → issue:2 → issue:1") {
		t.Errorf("text: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, args := range [][]string{{"graph"}, {"graph", "--project", "nope"}, {"graph", "--project", "widgets", "--depth", "-1"}} {
		if code, _, errOut := runCLI(t, nil, append(args, common...)...); code != exitUsage {
			t.Errorf("%q: exit %d (%s), want %d", args, code, errOut, exitUsage)
		}
	}
}

// TestGraphGivesUpOnASilentForge: graph against a forge that is down, or
// that accepts connections and never answers, fails within the forge
// timeout with one line naming the forge, instead of retrying every
// listing and printing a report of errors with exit 0.
func TestGraphGivesUpOnASilentForge(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String()
	_ = down.Close()

	for name, url := range map[string]string{"silent": "http://" + silent.Addr().String(), "down": downURL} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "projects", "widgets.toml"), "name = \"widgets\"\nrepo = \"acme/widgets\"\nops_repo = \"acme/widgets-ops\"\nforge_url = \""+url+"\"\n")
			writeFile(t, filepath.Join(dir, "env"), "FORGE_TOKEN=dev-token-0123456789\nFORGE_PASS=pass\nDISINTO_FORGE_TIMEOUT=1\n")
			code, out, errOut := runCLI(t, nil, "graph", "--project", "widgets", "--projects-dir", filepath.Join(dir, "projects"),
				"--env-file", filepath.Join(dir, "env"), "--data-dir", filepath.Join(dir, "data"))
			if code != exitFailure || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if !strings.Contains(errOut, url) || !strings.Contains(errOut, "does not answer") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("stderr is not one line naming the forge: %q", errOut)
			}
		})
	}
}
