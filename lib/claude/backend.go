package claude

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Backend is one model endpoint with its own concurrency budget (AD-002):
// the Anthropic credentials, or one local Anthropic-compatible server.
type Backend struct {
	// Name identifies the backend in invocations, logs and metrics.
	Name string
	// BaseURL becomes ANTHROPIC_BASE_URL; empty uses the CLI default.
	BaseURL string
	// APIKey becomes ANTHROPIC_API_KEY; empty leaves authentication to the
	// CLI's config dir (OAuth).
	APIKey string
	// Model is the default --model for this backend.
	Model string
	// MaxSessions bounds concurrent claude processes; 0 means 1.
	MaxSessions int
	// Env holds extra variables for this backend (e.g.
	// CLAUDE_AUTOCOMPACT_PCT_OVERRIDE for small context windows).
	Env map[string]string
}

// Observer receives the runner's metrics events. Calls may come from many
// goroutines at once. A nil Observer is allowed.
type Observer interface {
	// SlotWait reports how long a run waited for a backend slot (also
	// when the wait was abandoned because ctx ended).
	SlotWait(backend string, wait time.Duration)
	// SessionStarted and SessionEnded bracket a running claude process.
	SessionStarted(backend string)
	// SessionEnded reports the end of a run with its outcome error (nil on
	// success) and the result as far as it is known.
	SessionEnded(backend string, res Result, err error)
}

// semaphore is a counting semaphore with a context-aware acquire.
type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n < 1 {
		n = 1
	}
	return make(semaphore, n)
}

func (s semaphore) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	default:
	}
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s semaphore) release() { <-s }

type backendSlot struct {
	Backend
	sem semaphore
	// probe is the backend's last health probe (probe.go).
	probe probeState
}

func (e *Exec) backend(name string) (*backendSlot, error) {
	if name == "" {
		name = e.defaultBackend
	}
	b, ok := e.backends[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrBackend, name)
	}
	return b, nil
}

// acquire waits for a slot of b, logging and reporting the wait.
func (e *Exec) acquire(ctx context.Context, b *backendSlot, log *zerolog.Logger) error {
	start := e.now()
	select {
	case b.sem <- struct{}{}:
		e.observer().SlotWait(b.Name, 0)
		return nil
	default:
	}
	log.Info().Int("max_sessions", cap(b.sem)).Msg("waiting for a free claude slot")
	err := b.sem.acquire(ctx)
	wait := e.now().Sub(start)
	e.observer().SlotWait(b.Name, wait)
	if err != nil {
		return fmt.Errorf("wait for backend %s: %w", b.Name, err)
	}
	log.Info().Dur("waited", wait).Msg("got a claude slot")
	return nil
}

type nopObserver struct{}

func (nopObserver) SlotWait(string, time.Duration)     {}
func (nopObserver) SessionStarted(string)              {}
func (nopObserver) SessionEnded(string, Result, error) {}

func (e *Exec) observer() Observer {
	if e.opts.Observer == nil {
		return nopObserver{}
	}
	return e.opts.Observer
}
