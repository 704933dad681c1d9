package workspace

import (
	"context"
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
