package runner

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/claude"
)

// Paths and names inside the container.
const (
	// SecretsDir holds one file per declared secret: SecretsDir/NAME.
	SecretsDir = "/run/secrets"
	// tmpDir is the job's only other writable place, and its home.
	tmpDir = "/tmp"
	// reservedEnvPrefix marks the variables the runner sets itself.
	reservedEnvPrefix = "DISINTO_"
)

// Labels on every container the runner creates.
const (
	// LabelRunner marks a runner container ("true").
	LabelRunner = "org.disinto.runner"
	// LabelJob holds the job id.
	LabelJob = "org.disinto.runner.job"
)

// secretsSize bounds the tmpfs the secrets are unpacked into.
const secretsSize = 1 << 20

// bootstrap is the start of the container's first process. It unpacks
// the secrets, which arrive as a tar archive on stdin (never in the
// container's configuration, never on the host's disk), into the tmpfs at
// SecretsDir. Mode 0400 comes from the archive; tar running as the
// container user owns the files. The kind's own tail follows.
const bootstrap = `set -eu
umask 077
tar -x -f - -C ` + SecretsDir + ` --no-same-owner
chmod 0500 ` + SecretsDir + `
umask 022
cd ` + tmpDir + `
`

// mechanicalTail replaces the shell with the job's script, passed as $1,
// with stdin closed.
const mechanicalTail = `exec /bin/sh -c "$1" job </dev/null`

// reasoningTail exports the declared model credential, the one secret
// the CLI reads from its environment, and pipes the prompt ($1) into the
// claude command line that follows it.
const reasoningTail = `for n in ` + credentialNames + `; do
	if [ -f "` + SecretsDir + `/$n" ]; then export "$n=$(cat "` + SecretsDir + `/$n")"; fi
done
prompt=$1
shift
printf '%s' "$prompt" | "$@"`

// modelCredentials are the secrets the claude CLI reads from its
// environment; credentialNames is the same, for the shell.
var modelCredentials = strings.Fields(credentialNames)

const credentialNames = "ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN"

// DefaultMaxTurns bounds a reasoning session that sets no MaxTurns.
const DefaultMaxTurns = 30

// reasoningEnv keeps a reasoning session to what the job gives it: no
// settings, memory or CLAUDE.md from anywhere, no update, no traffic but
// the model's; its claude state lives in the tmpfs.
var reasoningEnv = []string{
	"CLAUDE_CONFIG_DIR=" + tmpDir + "/.claude",
	"CLAUDE_CODE_DISABLE_CLAUDE_MDS=1",
	"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"DISABLE_AUTOUPDATER=1",
}

// isRunnerEnv reports whether the runner sets variable name itself (the
// job's home, a reasoning session's confinement), which a job's own
// environment may not override.
func isRunnerEnv(name string) bool {
	if name == "HOME" {
		return true
	}
	for _, kv := range reasoningEnv {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// command is the entrypoint and command of job j.
func command(j Job) (entrypoint, cmd []string) {
	if j.Kind == Reasoning {
		turns := j.MaxTurns
		if turns == 0 {
			turns = DefaultMaxTurns
		}
		args := claude.Args(claude.Invocation{Model: j.Model, MaxTurns: turns}, claude.Backend{}, "")
		return []string{"/bin/sh", "-c", bootstrap + reasoningTail, "bootstrap"},
			append([]string{j.Script, "claude"}, args...)
	}
	return []string{"/bin/sh", "-c", bootstrap + mechanicalTail, "bootstrap"}, []string{j.Script}
}

// secretsArchive is the tar archive of the job's secrets, one 0400 file
// per secret, owned by uid:gid, in name order. No secrets is an empty
// archive.
func secretsArchive(secrets map[string]string, uid, gid int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		value := secrets[name]
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name,
			Mode:     0o400,
			Size:     int64(len(value)),
			Uid:      uid,
			Gid:      gid,
			Format:   tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("archive secret %s: %w", name, err)
		}
		if _, err := tw.Write([]byte(value)); err != nil {
			return nil, fmt.Errorf("archive secret %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("archive secrets: %w", err)
	}
	return buf.Bytes(), nil
}

// createOptions is the container for job j: the image's /bin/sh running
// bootstrap as the unprivileged user, with no capabilities, no privilege
// gain, a read-only root, the job's limits and network, and nothing from
// the host mounted. It holds no secret value.
func (r *Launcher) createOptions(j Job, name string) client.ContainerCreateOptions {
	env := []string{
		"HOME=" + tmpDir,
		"DISINTO_JOB_ID=" + j.ID,
		"DISINTO_SECRETS_DIR=" + SecretsDir,
	}
	if j.Kind == Reasoning {
		env = append(env, reasoningEnv...)
	}
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		env = append(env, k+"="+j.Env[k])
	}
	labels := map[string]string{LabelRunner: "true", LabelJob: j.ID}
	maps.Copy(labels, r.labels)
	network := j.Network
	if network == "" {
		network = "none"
	}
	pids := j.Limits.Pids
	entrypoint, cmd := command(j)
	return client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:      r.image,
			User:       fmt.Sprintf("%d:%d", r.uid, r.gid),
			Env:        env,
			Entrypoint: entrypoint,
			Cmd:        cmd,
			WorkingDir: tmpDir,
			Labels:     labels,
			// Stdin carries the secrets archive once, then closes.
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
			OpenStdin:    true,
			StdinOnce:    true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    container.NetworkMode(network),
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges:true"},
			IpcMode:        container.IPCModePrivate,
			Tmpfs: map[string]string{
				tmpDir: fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,mode=1777", j.Limits.Tmp),
				SecretsDir: fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,mode=0700,uid=%d,gid=%d",
					secretsSize, r.uid, r.gid),
			},
			// The output is read from the attach stream and masked there;
			// no log driver keeps an unmasked copy on the host's disk.
			LogConfig:     container.LogConfig{Type: "none"},
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
			Resources: container.Resources{
				Memory:     j.Limits.Memory,
				MemorySwap: j.Limits.Memory,
				NanoCPUs:   j.Limits.NanoCPUs,
				PidsLimit:  &pids,
			},
		},
	}
}
