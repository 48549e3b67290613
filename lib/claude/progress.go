package claude

import (
	"context"
	"time"
)

// Progress observes a session while it runs: the runner reports the
// process group and deadline once the CLI has started, every stream-json
// event the CLI prints, and the end. A session that prints events is
// alive; one that prints nothing for long is stalled. Implementations must
// be cheap and safe for concurrent use; they are called from the goroutine
// reading the CLI's output.
type Progress interface {
	// SessionStarted reports the CLI's process group (its leader's pid)
	// and the hard deadline after which the runner kills it.
	SessionStarted(pgid int, deadline time.Time)
	// SessionEvent reports one line of the CLI's output: the stream-json
	// event type ("system", "assistant", "user", "result"), or "" for a
	// line that is not an event.
	SessionEvent(kind string)
	// SessionEnded reports that the CLI and its process group are gone.
	SessionEnded()
}

type progressKey struct{}

// WithProgress returns a context whose sessions report to p, in the way
// net/http/httptrace carries a ClientTrace: whoever starts the work (the
// agent runtime) attaches the heartbeat, and every Run under the context
// feeds it without each caller passing it along.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// progressFrom returns the Progress of ctx, or one that ignores everything.
func progressFrom(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) SessionStarted(int, time.Time) {}
func (noProgress) SessionEvent(string)           {}
func (noProgress) SessionEnded()                 {}
