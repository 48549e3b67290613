package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/disinto/disinto/agents/predictor"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/vault"
)

// newPredictorAgent builds the predictor of one project, acting as
// predictor-bot (FORGE_PREDICTOR_TOKEN, else the dev bot): its own clone
// under <data>/clones/<project>/<bot>, its state (lock, watermark, last
// filings) under <data>/state/<project>/predictor, the predictor formula,
// the project's ops checkout as last fetched, the vault's requester (as
// the vault bot, with its own ops checkout under
// <data>/vault/<project>/predictor-ops; none without a vault identity,
// and an exploit then files its prediction and says no request was made)
// and the shared model runner. No structural graph is wired yet.
func newPredictorAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts(predictor.FormulaName, nil)
	if err != nil {
		return nil, err
	}
	runner := d.FormulaRunner(rp)
	var requests predictor.Vault
	if v, err := vaultParts(d); err == nil {
		q, err := v.Requester(d.Log)
		if err != nil {
			return nil, err
		}
		requests = predictorVault{q: q}
	} else {
		d.Log.Info().Str("project", p.Name).Str("reason", s.Redactor.String(err.Error())).Msg("predictor: exploits make no vault request")
	}
	return predictor.New(predictor.Options{
		Project: p.Name, Primary: p.PrimaryBranch, Forge: rp.Forge, Runner: runner,
		Formulas: factoryFormulas(), Ops: predictorOps{s: s, p: p}, Vault: requests,
		Graph: predictorGraph{opsOf: s.OpsRepo, p: p, repo: rp.Forge, log: d.Log}, Redactor: s.Redactor, Log: d.Log,
	}), nil
}

// factoryFormulas are the names of the shipped formulas.
func factoryFormulas() []string {
	names, _ := fs.Glob(formulas.FS, "*.toml")
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(n, ".toml"))
	}
	return out
}

// predictorOps is p's ops repository for the predictor: the daemon's
// managed checkout as last fetched, else the configured ops_repo_root
// directory, else none.
type predictorOps struct {
	s *daemon.Services
	p *config.Project
}

// Snapshot implements predictor.Ops.
func (o predictorOps) Snapshot(ctx context.Context) (predictor.OpsTree, string, error) {
	if r := o.s.OpsRepo(o.p.Name); r != nil {
		files, head, err := r.Local(ctx)
		if err != nil || head == "" {
			return predictor.OpsTree{}, "", err
		}
		return predictor.OpsTree{FS: files.FS(), List: func(dir string) ([]string, error) {
			tf, err := files.List(dir)
			out := make([]string, 0, len(tf))
			for _, f := range tf {
				out = append(out, f.Path)
			}
			return out, err
		}}, head, nil
	}
	if root := o.p.OpsRepoRoot; root != "" {
		return predictor.OpsTree{FS: os.DirFS(root), List: func(dir string) ([]string, error) {
			es, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
			if os.IsNotExist(err) {
				return nil, nil
			}
			out := make([]string, 0, len(es))
			for _, e := range es {
				if e.Type().IsRegular() {
					out = append(out, e.Name())
				}
			}
			return out, err
		}}, "dir", nil
	}
	return predictor.OpsTree{}, "", nil
}

// predictorVault files the predictor's typed requests through the vault's
// requester, which validates them as the dispatcher does.
type predictorVault struct{ q *vault.Requester }

// Request implements predictor.Vault.
func (v predictorVault) Request(ctx context.Context, r predictor.VaultRequest) (predictor.VaultReceipt, error) {
	rc, err := v.q.RequestAction(ctx, vault.Action{ID: r.ID, Formula: r.Formula, Context: r.Context, Secrets: r.Secrets,
		TimeoutMinutes: vault.DefaultTimeoutMinutes})
	if err != nil {
		return predictor.VaultReceipt{}, err
	}
	return predictor.VaultReceipt{PR: rc.PR, Commit: rc.Commit}, nil
}
