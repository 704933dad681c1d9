package httpauth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestBearer: the token of an Authorization header, whatever the case of
// its scheme; anything else is none.
func TestBearer(t *testing.T) {
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer abc": "abc", "BEARER  abc ": "abc", "Basic abc": "", "Bearer": "", "Bearer a b": "", "": ""} {
		r := httptest.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		got, ok := Bearer(r)
		if got != want || ok != (want != "") {
			t.Errorf("Bearer(%q) = %q, %v; want %q", h, got, ok, want)
		}
	}
}

// TestCaller: who a request acts as on a gate that trusts its loopback
// and on one that admits tokens only.
func TestCaller(t *testing.T) {
	w, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	k := tokens.Tree(w)
	tok, _, err := tokens.Add(t.Context(), k, tokens.Grant{Agent: "alpha", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	trusted, strict := &Gate{Keeper: k, TrustLoopback: true}, &Gate{Keeper: k}
	cases := []struct {
		name         string
		gate         *Gate
		host, token  string
		agent        string
		want         string
		err          error
		fromTheToken bool
	}{
		{"trusted, no header", trusted, "127.0.0.1:1", "", "", DefaultAgent, nil, false},
		{"trusted, a header", trusted, "localhost:1", "", "planner", "planner", nil, false},
		{"trusted, a token", trusted, "127.0.0.1:1", tok, "", "alpha", nil, true},
		{"trusted, a foreign host", trusted, "evil.example", "", "", "", ErrHost, false},
		{"trusted, a bad name", trusted, "127.0.0.1", "", "a b", "", workspace.ErrInvalid, false},
		{"strict, no token", strict, "127.0.0.1", "", "planner", "", ErrNoToken, false},
		{"strict, a token", strict, "anywhere.example", tok, "", "alpha", nil, true},
		{"strict, the token's agent named", strict, "anywhere.example", tok, "alpha", "alpha", nil, true},
		{"strict, another agent named", strict, "anywhere.example", tok, "beta", "", ErrOtherAgent, true},
		{"strict, an unknown token", strict, "anywhere.example", "wsd_nope", "", "", ErrUnknownToken, false},
		{"no keeper", &Gate{}, "127.0.0.1", tok, "", "", ErrUnknownToken, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/agent", nil)
			r.Host = tc.host
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.agent != "" {
				r.Header.Set(HeaderAgent, tc.agent)
			}
			c, err := tc.gate.Caller(r)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || c.Grant.Agent != tc.want || c.Token != tc.fromTheToken {
				t.Fatalf("caller %+v, %v; want agent %s", c, err, tc.want)
			}
		})
	}
}

// counted is a Keeper that counts its look-ups.
type counted struct {
	tokens.Keeper
	n *int
}

func (c counted) Lookup(token string) (tokens.Grant, error) {
	*c.n++
	return c.Keeper.Lookup(token)
}

// TestOnce: through Once, a request's token is looked up once for the
// guard and the gate alike; the next request looks it up again, so a
// token revoked between two requests is refused from the second on.
func TestOnce(t *testing.T) {
	w, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	n := 0
	k := counted{tokens.Tree(w), &n}
	tok, g, err := tokens.Add(t.Context(), k, tokens.Grant{Agent: "alpha", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	gate := &Gate{Keeper: k}
	var got []string
	h := Once(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := LookupFor(r, k, tok); err != nil { // the guard's
			got = append(got, "guard: "+err.Error())
		}
		c, err := gate.Caller(r)
		if err != nil {
			got = append(got, "gate: "+err.Error())
			return
		}
		got = append(got, c.Grant.Agent)
	}))
	serve := func() {
		r := httptest.NewRequest("GET", "/api/v1/agent", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	serve()
	if n != 1 || len(got) != 1 || got[0] != "alpha" {
		t.Fatalf("one request: %d look-ups, %q; want 1, [alpha]", n, got)
	}
	if _, err := tokens.Revoke(t.Context(), k, g.ID(), ""); err != nil {
		t.Fatal(err)
	}
	got = nil
	serve()
	if n != 2 || len(got) != 2 || !strings.Contains(got[0], "revoked") || !strings.Contains(got[1], "revoked") {
		t.Fatalf("after the revoke: %d look-ups, %q; want 2, refused twice", n, got)
	}
	// Another keeper is asked for itself.
	other := counted{tokens.Tree(w), new(int)}
	r := httptest.NewRequest("GET", "/", nil)
	Once(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = LookupFor(r, k, tok)
		_, _ = LookupFor(r, other, tok)
	})).ServeHTTP(httptest.NewRecorder(), r)
	if *other.n != 1 {
		t.Fatalf("another keeper looked up %d times, want 1", *other.n)
	}
	// Without Once, every look-up is made.
	n = 0
	_, _ = LookupFor(r, k, tok)
	_, _ = LookupFor(r, k, tok)
	if n != 2 {
		t.Fatalf("without Once: %d look-ups, want 2", n)
	}
}
