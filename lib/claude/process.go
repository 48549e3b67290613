package claude

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/text"
)

// Why a process group was signalled.
const (
	reasonIdle    = "idle after result"
	reasonContext = "context ended"
)

// killer terminates a process group once: SIGTERM, then SIGKILL after a
// grace period. finish kills whatever is left after the leader exited.
type killer struct {
	mu     sync.Mutex
	pgid   int
	grace  time.Duration
	reason string
	timer  *time.Timer
	done   bool
}

// setGroup records the process group; called before any signal can be sent.
func (k *killer) setGroup(pgid int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pgid = pgid
}

func (k *killer) terminate(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// pgid 0 would signal our own group: never.
	if k.done || k.reason != "" || k.pgid <= 0 {
		return
	}
	k.reason = reason
	_ = syscall.Kill(-k.pgid, syscall.SIGTERM)
	k.timer = time.AfterFunc(k.grace, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if !k.done {
			_ = syscall.Kill(-k.pgid, syscall.SIGKILL)
		}
	})
}

// finish stops the pending SIGKILL timer and kills every process still in
// the group (tool processes the CLI left behind), so nothing outlives Run.
func (k *killer) finish() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.timer != nil {
		k.timer.Stop()
	}
	if k.pgid > 0 {
		_ = syscall.Kill(-k.pgid, syscall.SIGKILL)
	}
	return k.reason
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append([]byte{}, t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// runProcess starts the CLI in its own process group, feeds the prompt on
// stdin, parses stdout while it arrives and enforces the limits.
func (e *Exec) runProcess(ctx context.Context, inv Invocation, args, env []string, log zerolog.Logger) (Result, error) {
	timeout := inv.Timeout
	if timeout <= 0 {
		timeout = e.opts.Timeout
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tr, err := e.openTranscript(inv)
	if err != nil {
		return Result{}, err
	}
	parser := newStreamParser(tr, log)
	progress := progressFrom(ctx)
	parser.onLine = progress.SessionEvent
	stderr := &tailBuffer{max: 4 << 10}

	k := &killer{grace: e.opts.KillGrace}
	cmd := exec.CommandContext(runCtx, e.bin, args...)
	cmd.Dir = inv.Dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(inv.Prompt)
	cmd.Stdout = parser
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if inv.Workspace != nil {
		cmd.SysProcAttr.Credential = inv.Workspace.Credential()
	}
	cmd.Cancel = func() error {
		// Cancel may run before Start returns; cmd.Process is set by then.
		k.setGroup(cmd.Process.Pid)
		k.terminate(reasonContext)
		return nil
	}
	// After the leader is gone (or the context ended), give the group the
	// kill grace, then stop waiting for descendants holding the pipes.
	cmd.WaitDelay = e.opts.KillGrace + time.Second

	start := e.now()
	if err := cmd.Start(); err != nil {
		_ = tr.Close()
		return Result{}, fmt.Errorf("start %s: %w", e.bin, err)
	}
	k.setGroup(cmd.Process.Pid)
	deadline, _ := runCtx.Deadline() // the timeout, or the caller's earlier one
	progress.SessionStarted(cmd.Process.Pid, deadline)
	defer progress.SessionEnded()

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.watch(parser.resultSeen, done, k, log)
	}()
	waitErr := cmd.Wait()
	close(done)
	wg.Wait()
	reason := k.finish()
	parser.flush()
	trErr := tr.Close()

	res := Result{ExitCode: -1, TranscriptPath: tr.path}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	parser.result(&res)
	if !res.HasResult || res.Duration == 0 {
		res.Duration = e.now().Sub(start)
	}
	res.KilledAfterResult = reason == reasonIdle
	if trErr != nil {
		log.Warn().Err(trErr).Msg("claude transcript incomplete")
	}

	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("claude run: %w", ctx.Err())
	case reason == reasonContext && errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.TimedOut = true
		return res, fmt.Errorf("after %s: %w", timeout, ErrTimeout)
	case res.HasResult:
		if res.IsError && (res.APIErrorStatus == 401 || res.APIErrorStatus == 403 || res.APIErrorStatus == 429 || res.APIErrorStatus >= 500) {
			return res, &APIError{Status: res.APIErrorStatus, Text: e.redactor().String(text.Clip(res.Text, 300))}
		}
		if inv.ResumeID != "" && sessionMissing(res) {
			return res, fmt.Errorf("resume %s: %w: %s", inv.ResumeID, ErrSessionNotFound, strings.Join(res.Errors, "; "))
		}
		if res.Subtype == "error_max_turns" {
			return res, fmt.Errorf("after %d turns: %w", res.NumTurns, ErrMaxTurns)
		}
		return res, nil
	case res.ExitCode != 0:
		ce := &CrashError{ExitCode: res.ExitCode, Stderr: e.redactor().String(text.Clip(stderr.String(), 1000))}
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				ce.Signal = ws.Signal().String()
			}
		}
		return res, ce
	default:
		lines, garbage, last := parser.badOutput()
		return res, fmt.Errorf("%w: %d lines, %d undecodable, last %q", ErrNoResult, lines, garbage, e.redactor().String(last))
	}
}

// watch starts the idle grace once the result event is seen and
// terminates the group when the CLI lingers past it.
func (e *Exec) watch(resultSeen, done <-chan struct{}, k *killer, log zerolog.Logger) {
	select {
	case <-done:
		return
	case <-resultSeen:
	}
	t := time.NewTimer(e.opts.IdleGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn().Dur("grace", e.opts.IdleGrace).Msg("claude still running after its result, terminating")
		k.terminate(reasonIdle)
	}
}

// sessionMissing recognises the CLI's answer to a --resume it cannot
// honour: an error result with no turns naming the session.
func sessionMissing(r Result) bool {
	if !r.IsError || r.NumTurns != 0 {
		return false
	}
	for _, m := range r.Errors {
		if strings.Contains(m, "No conversation found") || strings.Contains(m, "--resume requires") {
			return true
		}
	}
	return false
}
