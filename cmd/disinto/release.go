package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	agentvault "github.com/disinto/disinto/agents/vault"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

func (a *app) releaseCmd() *cobra.Command {
	var project, sha string
	var retry bool
	c := &cobra.Command{
		Use: "release vX.Y.Z [--project P] [--sha COMMIT]",
		Example: "  disinto release v1.2.0 --project widgets\n" +
			"  disinto release v1.2.1 --project widgets --sha 3f2a9c…   # a commit other than the primary branch's head\n" +
			"  disinto release v1.2.0 --project widgets --retry          # again, after an attempt that failed or was cut short",
		Short: "Request a release through the vault: tag the primary branch's head, push the tag to the mirrors",
		Long: "Files the vault action release-<project>-<version> (formula release, high tier by the ops policy),\n" +
			"which opens the ops pull request \"vault: release-…\". Once an administrator approves it at its head\n" +
			"and merges it, the vault dispatcher runs it once in the runner: the commit is tagged on the forge\n" +
			"with the secret RELEASE_TOKEN and the tag pushed to every mirror whose MIRROR_<NAME>_TOKEN is stored.\n" +
			"Asking again for the same release finds the first request. A version whose tag exists on another\n" +
			"commit is refused; a tag is never moved. After an attempt that failed, timed out, was left started\n" +
			"by a dispatcher that died, or pushed to only some mirrors, --retry files the next attempt\n" +
			"(release-…-r2, …), approved like the first; the release completes what the earlier one left.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{errors.New("release takes one version, e.g. disinto release v1.2.0")}
			}
			if _, err := release.ParseVersion(args[0]); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.requestRelease(cmd.Context(), project, args[0], sha, retry)
		},
	}
	c.Flags().BoolVar(&retry, "retry", false, "ask again after an attempt that did not complete")
	c.Flags().StringVar(&project, "project", "", "project (default: the only one)")
	c.Flags().StringVar(&sha, "sha", "", "the commit to tag (default: the primary branch's head)")
	return c
}

// releaseForge is what a release request reads of the project
// repository.
type releaseForge interface {
	GetBranch(ctx context.Context, name string) (forge.Branch, error)
	GetTag(ctx context.Context, name string) (forge.Tag, error)
}

// requestRelease files the release action of version for project.
func (a *app) requestRelease(ctx context.Context, project, version, sha string, retry bool) error {
	v, err := a.cliVault(project)
	if err != nil {
		return err
	}
	p := v.Project
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: v.Bot.Token, User: v.Bot.User, Redactor: v.Redactor()})
	if err != nil {
		return err
	}
	mirrors, err := a.releaseMirrors(ctx, v)
	if err != nil {
		return err
	}
	req := release.Request{Project: p.Name, Version: version, Mirrors: mirrors}
	if retry {
		base, err := release.ActionID(p.Name, version)
		if err != nil {
			return err
		}
		var prev string
		if req.Attempt, prev, err = releaseAttempt(ctx, v.Ops, base); err != nil {
			return err
		}
		if sha == "" && prev != "" {
			sha = prev // the commit the earlier attempt tagged, or meant to
		}
	}
	owner, name, _ := strings.Cut(p.Repo, "/")
	if req.SHA, err = releaseCommit(ctx, fc.Repo(owner, name), p.Repo, p.PrimaryBranch, version, sha); err != nil {
		return err
	}
	act, err := req.Action()
	if err != nil {
		return err
	}
	q, err := v.Requester(zerolog.Nop())
	if err != nil {
		return err
	}
	r, err := q.RequestAction(ctx, act)
	if errors.Is(err, vault.ErrDuplicateID) {
		return fmt.Errorf("%w (a release of %s was requested before with other content, or has run: see disinto vault show %s; --retry asks again)", err, version, act.ID)
	}
	if err != nil {
		return err
	}
	a.printRelease(r, req, p.Mirrors)
	return nil
}

// printRelease says where the request of req landed and what comes next.
func (a *app) printRelease(r vault.Receipt, req release.Request, configured map[string]string) {
	again := ""
	if r.Existing {
		again = " (requested before)"
	}
	fmt.Fprintf(a.stdout, "%s: release %s of %s at %s, %s tier%s\n", r.ID, req.Version, req.Project, req.SHA, r.Tier, again)
	skipped := slices.DeleteFunc(sortedKeys(configured), func(m string) bool { return slices.Contains(req.Mirrors, m) })
	if len(req.Mirrors) > 0 {
		fmt.Fprintf(a.stdout, "the tag goes to the mirrors: %s\n", strings.Join(req.Mirrors, ", "))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(a.stdout, "mirrors skipped (no stored token allowed by the vault policy): %s\n", strings.Join(skipped, ", "))
	}
	switch r.Mode {
	case vault.ModePR:
		fmt.Fprintf(a.stdout, "pull request #%d %s\nnext: an administrator approves it at its head and merges it; see disinto vault approve-hint %s\n", r.PR, r.URL, r.ID)
	default:
		fmt.Fprintf(a.stdout, "committed directly (low tier by the ops policy); the dispatcher runs it within a minute\n")
	}
}

// opsReader reads a file of the ops repository's primary branch
// (fs.ErrNotExist when there is none); *ops.Repo implements it.
type opsReader interface {
	Read(ctx context.Context, path string) ([]byte, error)
}

// releaseAttempt is the attempt --retry files: the first one that has no
// result yet (filed and waiting, or not filed), after attempts that
// failed, timed out, were left started or pushed to only some mirrors; and
// the commit the attempt before it was for. A release that completed is
// not asked for again.
func releaseAttempt(ctx context.Context, ops opsReader, base string) (int, string, error) {
	prev := ""
	for n := 1; n <= release.MaxAttempts; n++ {
		id := release.AttemptID(base, n)
		data, err := ops.Read(ctx, vault.ResultPath(id))
		if errors.Is(err, fs.ErrNotExist) {
			return n, prev, nil
		}
		if err != nil {
			return 0, "", err
		}
		rec, err := vault.ParseResult(vault.ResultPath(id), data)
		if err != nil {
			return 0, "", err
		}
		if sha, err := actionSHA(ctx, ops, id); err == nil && sha != "" {
			prev = sha
		}
		if rec.Status != vault.StatusSucceeded {
			continue
		}
		if rep, err := release.ParseReport(rec.Report); err == nil && rep.Status == release.StatusPartial {
			continue
		}
		return 0, "", fmt.Errorf("release %s: %s completed (%s); nothing to retry", base, id, vault.ResultPath(id))
	}
	return 0, "", fmt.Errorf("release %s: %d attempts, the most there may be", base, release.MaxAttempts)
}

// actionSHA is the commit release action id was for.
func actionSHA(ctx context.Context, ops opsReader, id string) (string, error) {
	data, err := ops.Read(ctx, vault.ActionPath(id))
	if err != nil {
		return "", err
	}
	var a struct {
		Vars map[string]string `toml:"vars"`
	}
	if _, err := toml.Decode(string(data), &a); err != nil {
		return "", fmt.Errorf("%s: %w", vault.ActionPath(id), err)
	}
	return a.Vars[release.VarSHA], nil
}

// releaseCommit returns the commit to tag: want, or the primary branch's
// head. A tag of version already on another commit refuses the release.
func releaseCommit(ctx context.Context, f releaseForge, repo, branch, version, want string) (string, error) {
	if want == "" {
		b, err := f.GetBranch(ctx, branch)
		if err != nil {
			return "", fmt.Errorf("release %s: the head of %s in %s: %w", version, branch, repo, err)
		}
		want = b.SHA
	}
	t, err := f.GetTag(ctx, version)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		return want, nil
	case err != nil:
		return "", fmt.Errorf("release %s: %w", version, err)
	case t.SHA != want:
		return "", fmt.Errorf("release %s of %s: %w (%s, not %s); a tag is never moved: release a new version", version, repo, release.ErrTagElsewhere, t.SHA, want)
	}
	return want, nil
}

// releaseMirrors are the project's mirrors the release pushes to: those
// whose token is stored and allowed by the ops repository's policy.
func (a *app) releaseMirrors(ctx context.Context, v *agentvault.Parts) ([]string, error) {
	if len(v.Project.Mirrors) == 0 {
		return nil, nil
	}
	pol := vault.DefaultPolicy()
	data, err := v.Ops.Read(ctx, vault.PolicyPath)
	switch {
	case err == nil:
		if pol, err = vault.ParsePolicy(vault.PolicyPath, data); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	stored, err := secrets.Open(a.dataDir).List()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range sortedKeys(v.Project.Mirrors) {
		s := release.MirrorSecret(m)
		if slices.Contains(stored, s) && slices.Contains(pol.Secrets, s) {
			out = append(out, m)
		}
	}
	return out, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// envSecretsDir is where the runner put the job's secret files (lib/runner
// sets it; runner.SecretsDir when unset).
const envSecretsDir = "DISINTO_SECRETS_DIR"

// runnerJobCmd groups the mechanical jobs the runner image runs with its
// own disinto binary (release.JobCommand). Hidden: nobody runs them by
// hand; the vault runner starts them in the action's container.
func (a *app) runnerJobCmd() *cobra.Command {
	c := &cobra.Command{
		Use:    "runner-job",
		Short:  "Run a vault action's mechanical job inside the runner container",
		Hidden: true,
	}
	c.AddCommand(&cobra.Command{
		Use:     "release",
		Example: "  " + release.JobCommand + "   # in the runner container, as the job's script runs it",
		Short:   "Tag the release's commit on the forge and push the tag to the mirrors",
		Long: "Reads the release job's RELEASE_* environment and its tokens from the secret files, tags the\n" +
			"commit through the forge API unless the tag is already on it (a tag elsewhere fails the release),\n" +
			"pushes the tag to every mirror with a token, and prints the " + release.ResultMarker + "line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := release.ReadInputs(a.getenv, a.envOr(envSecretsDir, runner.SecretsDir))
			if err != nil {
				return err
			}
			if !release.Execute(cmd.Context(), in, release.ExecOptions{Out: a.stdout}).Succeeded() {
				return errSilent // the result line says why
			}
			return nil
		},
	})
	return c
}
