package predictor

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"sort"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent/formulaagenttest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea (formulaagenttest.Rig): an
// owner (who plays humans and the planner), a predictor bot
// collaborator, a primary branch, an ops tree, and a predictor acting as
// the bot with the real claude CLI against a scripted model server.
type rig struct {
	*formulaagenttest.Rig
	a       *Agent
	ops     fstest.MapFS
	opsHead string
	vault   *recordingVault
	// enable, when set, is the runtime's record of paused roles.
	enable *agent.Enablement
}

func ctxOf(t testing.TB) context.Context { return formulaagenttest.Ctx(t) }

// newRig makes the project with files on main.
func newRig(t testing.TB, files map[string]string) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("real Gitea suite; the full test command runs it")
	}
	all := map[string]string{"docs/seed.md": "proj\n"}
	for p, c := range files {
		all[p] = c
	}
	r := &rig{Rig: formulaagenttest.New(t, gitea.Get(t), formulaagenttest.Options{Role: role, Files: all}),
		ops: fstest.MapFS{}, opsHead: "ops1", vault: &recordingVault{}}
	r.build()
	return r
}

// build (re)makes the runtime and the agent over the same data dir.
func (r *rig) build() {
	t := r.T
	t.Helper()
	f, err := formula.Load(formulas.FS, FormulaName)
	if err != nil {
		t.Fatal(err)
	}
	r.NewRuntime(r.enable)
	r.a = New(Options{Project: r.Project.Name, Primary: "main", Forge: r.BotRepo, Driver: r.FormulaRunner(f),
		Formulas: []string{"run-gardener", "run-predictor", "run-red-team"}, Ops: mapOps{r}, Vault: r.vault, Log: r.Log})
}

// mapOps serves the rig's ops tree.
type mapOps struct{ r *rig }

func (o mapOps) Snapshot(context.Context) (OpsTree, string, error) {
	fsys := o.r.ops
	return OpsTree{FS: fsys, List: func(dir string) ([]string, error) {
		var out []string
		for p := range fsys {
			if path.Dir(p) == dir {
				out = append(out, p)
			}
		}
		sort.Strings(out)
		return out, nil
	}}, o.r.opsHead, nil
}

// recordingVault records the typed requests the predictor makes and
// answers with a pull request number of its own counting; lib/vault's
// requester stands behind the same interface in the daemon.
type recordingVault struct {
	mu   sync.Mutex
	reqs []VaultRequest
	// refuse, when set, is the answer to every request.
	refuse error
}

func (v *recordingVault) Request(_ context.Context, q VaultRequest) (VaultReceipt, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reqs = append(v.reqs, q)
	if v.refuse != nil {
		return VaultReceipt{}, v.refuse
	}
	return VaultReceipt{PR: int64(100 + len(v.reqs))}, nil
}

// tick runs one predictor pass as the daemon's runtime does.
func (r *rig) tick() error { return r.Tick(r.a, config.RolePredictor) }

func (r *rig) mustTick() { r.T.Helper(); r.MustTick(r.a, config.RolePredictor) }

// script makes the model's one session write the proposals.
func (r *rig) script(ps ...Proposal) {
	r.T.Helper()
	data, err := json.Marshal(Proposals{Proposals: ps})
	if err != nil {
		r.T.Fatal(err)
	}
	r.scriptRaw(string(data))
}

func (r *rig) scriptRaw(out string) {
	r.T.Helper()
	r.Script(formulaagenttest.WriteEnvFile(EnvProposals, out))
}

func explore(title, theory string) Proposal {
	return Proposal{Kind: Explore, Title: title, Observation: "Seen: " + title + ".", Theory: theory,
		Confidence: "low", EvidenceChecked: "evidence/ and the tree", SuggestedAction: "Gather evidence first."}
}

func exploit(title, theory, formula string) Proposal {
	p := explore(title, theory)
	p.Kind, p.Confidence, p.Formula, p.Focus = Exploit, "high", formula, "try to break the launch claim"
	return p
}
