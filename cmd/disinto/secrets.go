package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/secrets"
)

// maxSecretBytes bounds a value read from stdin.
const maxSecretBytes = 1 << 20

// secretStore is the data dir's secret store.
func (a *app) secretStore() *secrets.Store { return secrets.Open(a.dataDir) }

// encEnvFile is the encrypted env file next to the env file.
func (a *app) encEnvFile() string { return config.EncryptedEnvFile(a.envFile) }

// envDecrypter decrypts the encrypted env file with the data dir's age
// identity, for config loading.
func (a *app) envDecrypter() config.Decrypter { return a.secretStore().DecryptFile }

func (a *app) secretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "secrets",
		Example: "  echo \"$TOKEN\" | disinto secrets set GITHUB_TOKEN\n  disinto secrets list",
		Short:   "Secrets at rest: age-encrypted, one file per name under <data>/secrets",
		Long: "Vault secrets are stored one per name in <data>/secrets/<NAME>.enc, encrypted with the age\n" +
			"identity <data>/keys/age.txt (created on first use, mode 0600). Values are read from stdin,\n" +
			"never from the command line. Only a vault action that declares a secret gets it, in its runner.",
	}
	cmd.AddCommand(a.secretsSetCmd(), a.secretsGetCmd(), a.secretsListCmd(), a.secretsRmCmd(), a.secretsRotateCmd(),
		a.secretsEnvEncryptCmd(), a.secretsEnvImportCmd())
	return cmd
}

func (a *app) secretsSetCmd() *cobra.Command {
	var force, raw bool
	c := &cobra.Command{
		Use:     "set NAME [--force] [--raw]",
		Example: "  disinto secrets set GITHUB_TOKEN            # prompts, without echo\n  disinto secrets set -f DEPLOY_KEY --raw < key.pem",
		Short:   "Store the value read from stdin under NAME (hidden prompt on a terminal)",
		Long: "Reads the value from stdin; one trailing newline is dropped unless --raw (so that\n" +
			"`echo token | disinto secrets set X` stores \"token\"). An existing secret is replaced only with --force.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secrets.CheckName(args[0]); err != nil {
				return usageError{err}
			}
			value, err := a.readSecret(cmd, args[0], raw)
			if err != nil {
				return err
			}
			if err := a.secretStore().Set(args[0], value, force); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "stored %s\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVarP(&force, "force", "f", false, "replace an existing secret")
	c.Flags().BoolVar(&raw, "raw", false, "keep the input exactly, trailing newline included")
	return c
}

// readSecret reads a value from the command's stdin: without echo on a
// terminal, else all of it.
func (a *app) readSecret(cmd *cobra.Command, name string, raw bool) ([]byte, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(a.stderr, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		return b, err
	}
	b, err := io.ReadAll(io.LimitReader(in, maxSecretBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the value of %s: %w", name, err)
	}
	if len(b) > maxSecretBytes {
		return nil, fmt.Errorf("the value of %s is over %d bytes", name, maxSecretBytes)
	}
	if !raw {
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
	}
	return b, nil
}

func (a *app) secretsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get NAME",
		Example: "  disinto secrets get GITHUB_TOKEN",
		Short:   "Print the value of NAME to stdout",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			v, err := a.secretStore().Get(args[0])
			if errors.Is(err, secrets.ErrBadName) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			_, err = io.WriteString(a.stdout, v)
			return err
		},
	}
}

func (a *app) secretsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Example: "  disinto secrets list",
		Short:   "Print the names stored, one per line",
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			names, err := a.secretStore().List()
			if err != nil {
				return err
			}
			if len(names) == 0 {
				fmt.Fprintln(a.stderr, "no secrets stored")
			}
			for _, n := range names {
				fmt.Fprintln(a.stdout, n)
			}
			return nil
		},
	}
}

func (a *app) secretsRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Example: "  disinto secrets rm NPM_TOKEN",
		Aliases: []string{"remove"},
		Short:   "Delete the secret NAME",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			err := a.secretStore().Remove(args[0])
			if errors.Is(err, secrets.ErrBadName) {
				return usageError{err}
			}
			if err == nil {
				fmt.Fprintf(a.stdout, "removed %s\n", args[0])
			}
			return err
		},
	}
}

func (a *app) secretsRotateCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rotate",
		Example: "  disinto secrets rotate",
		Short:   "Re-encrypt every secret, and the encrypted env file, to a new identity",
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := a.secretStore().Rotate(a.encEnvFile()); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "rotated: a new identity in %s\n", a.secretStore().KeyFile())
			return nil
		},
	}
}

func (a *app) secretsEnvEncryptCmd() *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:     "env-encrypt [--keep]",
		Example: "  disinto secrets env-encrypt --env-file .env",
		Short:   "Encrypt the env file (--env-file) to <env-file>.enc, check it decrypts, then delete the plain file",
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			plain, err := os.ReadFile(a.envFile)
			if err != nil {
				return err
			}
			if _, err := config.ParseEnv(a.envFile, bytes.NewReader(plain)); err != nil {
				return err
			}
			st := a.secretStore()
			if err := st.EncryptFile(a.encEnvFile(), plain); err != nil {
				return err
			}
			back, err := st.DecryptFile(a.encEnvFile())
			if err != nil || !bytes.Equal(back, plain) {
				return fmt.Errorf("%s does not decrypt to %s (%v); %s kept", a.encEnvFile(), a.envFile, err, a.envFile)
			}
			if !keep {
				if err := os.Remove(a.envFile); err != nil {
					return err
				}
			}
			fmt.Fprintf(a.stdout, "encrypted %s to %s\n", a.envFile, a.encEnvFile())
			return nil
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the plain env file")
	return c
}

func (a *app) secretsEnvImportCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:     "env-import [FILE]",
		Example: "  disinto secrets env-import            # <env-file>.enc\n  disinto secrets env-import .env.vault",
		Short:   "Store each KEY=VALUE of an env file as a secret (default <env-file>.enc; a plain file also works)",
		Long: "Imports once from the reference's single-file stores (.env.enc, .env.vault): lines are parsed\n" +
			"as KEY=VALUE, never evaluated. Nothing is stored unless every line parses.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			file := a.encEnvFile()
			if len(args) == 1 {
				file = args[0]
			}
			vals, err := a.readEnvFile(file)
			if err != nil {
				return err
			}
			keys := make([]string, 0, len(vals))
			for k := range vals {
				if err := secrets.CheckName(k); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				keys = append(keys, k)
			}
			sort.Strings(keys)
			st := a.secretStore()
			for _, k := range keys {
				if err := st.Set(k, []byte(vals[k]), force); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "stored %s\n", k)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&force, "force", "f", false, "replace secrets that exist")
	return c
}

// readEnvFile parses an env file, decrypting it when it is one of ours.
func (a *app) readEnvFile(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte("-----BEGIN AGE ENCRYPTED FILE-----")) {
		if data, err = a.secretStore().DecryptFile(file); err != nil {
			return nil, err
		}
	}
	return config.ParseEnv(file, bytes.NewReader(data))
}
