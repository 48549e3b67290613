package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/wait"
)

func TestFor(t *testing.T) {
	if err := wait.For(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a pause that ran out: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a pause whose context ended: %v", err)
	}
}
