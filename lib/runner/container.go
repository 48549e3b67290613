package runner

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
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

// bootstrap is the container's first process. It unpacks the secrets,
// which arrive as a tar archive on stdin (never in the container's
// configuration, never on the host's disk), into the tmpfs at SecretsDir,
// and then replaces itself with the job's script, passed as $1, with stdin
// closed. Mode 0400 comes from the archive; tar running as the container
// user owns the files.
const bootstrap = `set -eu
umask 077
tar -x -f - -C ` + SecretsDir + ` --no-same-owner
chmod 0500 ` + SecretsDir + `
umask 022
cd ` + tmpDir + `
exec /bin/sh -c "$1" job </dev/null`

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
func (r *Runner) createOptions(j Job, name string) client.ContainerCreateOptions {
	env := []string{
		"HOME=" + tmpDir,
		"DISINTO_JOB_ID=" + j.ID,
		"DISINTO_SECRETS_DIR=" + SecretsDir,
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
	return client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:      r.image,
			User:       fmt.Sprintf("%d:%d", r.uid, r.gid),
			Env:        env,
			Entrypoint: []string{"/bin/sh", "-c", bootstrap, "bootstrap"},
			Cmd:        []string{j.Script},
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
