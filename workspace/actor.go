package workspace

import (
	"context"
	"errors"
	"strings"
)

// Who made a write, beside its agent: the id of the token (tk_…) the
// request came with, never its secret. A door that admits agents by
// their tokens (the HTTP API, MCP) puts it in the write's context; every
// store names it in the events the write appends (attribute token), so
// the events and the audit say the same. A write without one (the CLI,
// a trusted listener, the daemon) names none, as every event line before
// did: old lines parse as they are.

// EventToken is the event attribute naming the token a write came with.
const EventToken = "token"

// ValidTokenID says whether id is a token's id as a token store names
// it: "tk_" and 1 to 64 lower-case hex digits. An event names no other.
func ValidTokenID(id string) bool {
	hex, ok := strings.CutPrefix(id, "tk_")
	if !ok || len(hex) == 0 || len(hex) > 64 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type tokenKey struct{}

// WithToken returns ctx carrying id, the id of the token a write is made
// with ("" carries none).
func WithToken(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, tokenKey{}, id)
}

// TokenOf is the id of the token ctx carries, or "".
func TokenOf(ctx context.Context) string {
	id, _ := ctx.Value(tokenKey{}).(string)
	return id
}

// Attributed is e naming the token of ctx, when it carries one (its
// attributes copied, not changed).
func Attributed(ctx context.Context, e Event) Event {
	id := TokenOf(ctx)
	if id == "" {
		return e
	}
	attrs := make(map[string]string, len(e.Attrs)+1)
	for k, v := range e.Attrs {
		attrs[k] = v
	}
	attrs[EventToken] = id
	e.Attrs = attrs
	return e
}

// A grant guard lets a door admit a request on the grant a look-up of its
// token read before, without reading it again: the operation's own
// statement writes or returns data only if the token's row still holds
// that very text, checked in the same statement (a store that can is
// GrantGuarding). A token's row is replaced whole whenever its grant
// changes (revoked, its rights or expiry changed, its last use written),
// so an unchanged row is the same grant, and a row changed or gone is
// refused with ErrGrantChanged: the door then looks the token up afresh,
// decides again and runs the operation once more.

// GrantGuard is the row of tokens a grant was read from: the token's
// hash (never the token) and the row's doc as it was read.
type GrantGuard struct {
	SHA256 string
	Doc    string
}

// ErrGrantChanged is an operation refused because the token's row it was
// guarded by changed or is gone. It is the door's to handle (a fresh
// look-up, then the operation again), never shown to a client.
var ErrGrantChanged = errors.New("the token's grant changed since it was read")

type guardKey struct{}

// WithGrantGuard returns ctx carrying g for the operations of a store
// that checks it (GrantGuarding).
func WithGrantGuard(ctx context.Context, g GrantGuard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// GrantGuardOf is the grant guard ctx carries, if any.
func GrantGuardOf(ctx context.Context) (GrantGuard, bool) {
	g, ok := ctx.Value(guardKey{}).(GrantGuard)
	return g, ok && g.SHA256 != ""
}
