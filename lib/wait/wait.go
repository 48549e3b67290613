// Package wait is the one context-aware pause every retry loop of the
// daemon uses between attempts.
package wait

import (
	"context"
	"time"
)

// For blocks for d or until ctx ends, whichever comes first; it returns
// ctx's error in the second case.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
