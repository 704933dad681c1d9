package httpauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// remembering is counted that remembers as the Keeper it counts does.
type remembering struct {
	counted
	r tokens.Rememberer
}

func (c remembering) Remembered(token string) (tokens.Grant, workspace.GrantGuard, bool) {
	return c.r.Remembered(token)
}

func (c remembering) Forget(token string) { c.r.Forget(token) }

// TestCallerGuarded: behind Once, a token whose grant the Keeper
// remembers is admitted by CallerGuarded, and counted by TokenID, without
// a look-up, the Caller's Guard naming the token's row; Caller looks it
// up every time; after Forget the next request looks it up again.
func TestCallerGuarded(t *testing.T) {
	st, _, err := sqlite.Init(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "ws.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	k := remembering{counted{st.Tokens(), &n}, st.Tokens().(tokens.Rememberer)}
	tok, g, err := tokens.Add(t.Context(), k, tokens.Grant{Agent: "alpha", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	gate := &Gate{Keeper: k}
	var got Caller
	serve := func(guarded bool) {
		t.Helper()
		h := Once(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id, ok := TokenID(r, k, tok); !ok || id != g.ID() {
				t.Errorf("TokenID = %q, %v; want %s", id, ok, g.ID())
			}
			var err error
			if guarded {
				got, err = gate.CallerGuarded(r)
			} else {
				got, err = gate.Caller(r)
			}
			if err != nil || got.Grant.Agent != "alpha" {
				t.Errorf("caller %+v, %v", got, err)
			}
		}))
		r := httptest.NewRequest("GET", "/api/v1/memory/items", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	steps := []struct {
		name      string
		guarded   bool
		lookups   int
		withGuard bool
	}{
		{"the first request looks the token up", true, 1, true},
		{"the next is admitted on the grant remembered", true, 1, true},
		{"a request that cannot carry a guard looks it up", false, 2, false},
		{"and again", true, 2, true},
	}
	for _, s := range steps {
		serve(s.guarded)
		if n != s.lookups || got.Guarded() != s.withGuard || (s.withGuard && got.Guard.SHA256 != tokens.Hash(tok)) {
			t.Fatalf("%s: %d look-ups, guard %+v; want %d, guarded %v", s.name, n, got.Guard, s.lookups, s.withGuard)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	gate.Forget(r)
	serve(true)
	if n != 3 {
		t.Fatalf("after Forget: %d look-ups, want 3", n)
	}
}
