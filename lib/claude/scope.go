package claude

import (
	"context"
	"time"

	"github.com/disinto/disinto/lib/gateway"
)

// Scope is whom a session works for, as the model gateway meters and
// budgets it: the project and role, the project's budgets and where its
// days begin.
type Scope struct {
	Project, Role string
	Limits        gateway.Limits
	TZ            *time.Location
}

type scopeKey struct{}

// WithScope returns ctx carrying s for the sessions run under it.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf is the scope ctx carries (zero: none, no budget).
func scopeOf(ctx context.Context) Scope {
	s, _ := ctx.Value(scopeKey{}).(Scope)
	return s
}
