package oauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/workspace"
)

const resource = "https://mcp.example.com/mcp"

func newVerifier(t testing.TB) (*Verifier, *oidctest.Provider) {
	t.Helper()
	p := oidctest.Start(t)
	p.Register(oidctest.Client{ID: "worker-1", Secret: "s1", Audience: []string{resource}, Lifetime: time.Minute})
	v, err := New(context.Background(), Config{OAuthSettings: workspace.OAuthSettings{Issuer: p.URL, Resource: resource}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v, p
}

// TestRemember: a token accepted is accepted again from memory, never
// past its expiry; the memory stays bounded.
func TestRemember(t *testing.T) {
	t.Parallel()
	v, p := newVerifier(t)
	ctx := context.Background()
	tok := p.Token(t, "worker-1", "workspace:task:t1")
	a, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.seen) != 1 {
		t.Fatalf("remembered %d tokens, want 1", len(v.seen))
	}
	if b, err := v.Verify(ctx, tok); err != nil || b.Grant.ID() != a.Grant.ID() {
		t.Fatalf("again: %+v, %v", b, err)
	}
	// Past its expiry the token is checked again, and refused.
	real := v.now
	v.now = func() time.Time { return real().Add(2 * time.Minute) }
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("past its expiry: %v", err)
	}
	v.now = real
	// Full, the expired ones go; with none expired, all go.
	for i := range rememberMax + 10 {
		v.remember([32]byte{byte(i), byte(i >> 8), 1}, Access{Expiry: real().Add(time.Minute)})
	}
	if len(v.seen) > rememberMax {
		t.Fatalf("%d remembered, more than %d", len(v.seen), rememberMax)
	}
}

// BenchmarkSignature is the cost of checking a token not remembered
// (an RS256 signature, the keys already fetched, and the claims mapped).
func BenchmarkSignature(b *testing.B) {
	v, p := newVerifier(b)
	tok := p.Token(b, "worker-1", "workspace:task:t1")
	ctx := context.Background()
	for b.Loop() {
		if _, err := v.verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
