package tokens_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/tokens/tokenstest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

const goodHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func newWS(t *testing.T) *files.Store {
	t.Helper()
	w, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestParse: every broken, hostile or half-understood agents file is
// refused whole, with a message naming the fault; a good one parses.
func TestParse(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"good", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"],"may":["claim"],"global_memory":"read","created_at":"2024-01-15T10:00:00Z"}]}`, ""},
		{"empty list", `{"tokens":[]}`, ""},
		{"every task", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["*"],"created_at":"2024-01-15T10:00:00Z"}]}`, ""},
		{"not JSON", `{"tokens":[`, "not an agents file"},
		{"empty", ``, "not an agents file"},
		{"null", `null`, `no "tokens" list`},
		{"array", `[]`, "not an agents file"},
		{"no list", `{}`, `no "tokens" list`},
		{"unknown field", `{"tokens":[],"admin":true}`, "unknown field"},
		{"unknown grant field", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"],"root":true}]}`, "unknown field"},
		{"data after", `{"tokens":[]} {}`, "data after"},
		{"bad agent", `{"tokens":[{"agent":"../a","sha256":"` + goodHash + `","tasks":["t1"]}]}`, `agent "../a" is not an id`},
		{"no agent", `{"tokens":[{"sha256":"` + goodHash + `","tasks":["t1"]}]}`, `agent "" is not an id`},
		{"short hash", `{"tokens":[{"agent":"a","sha256":"abc","tasks":["t1"]}]}`, "64 lowercase hexadecimal"},
		{"upper hash", `{"tokens":[{"agent":"a","sha256":"` + strings.ToUpper(goodHash) + `","tasks":["t1"]}]}`, "64 lowercase hexadecimal"},
		{"not hex", `{"tokens":[{"agent":"a","sha256":"` + strings.Repeat("zz", 32) + `","tasks":["t1"]}]}`, "64 lowercase hexadecimal"},
		{"no tasks", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `"}]}`, "no tasks"},
		{"bad task", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["../t"]}]}`, `task "../t" is not an id`},
		{"task wildcard in name", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t*"]}]}`, `task "t*" is not an id`},
		{"bad right", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"],"may":["admin"]}]}`, `unknown right "admin"`},
		{"bad global", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"],"global_memory":"all"}]}`, "none, read or write"},
		{"tasks not a list", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":"*"}]}`, "not an agents file"},
		{"nested deep", strings.Repeat(`{"tokens":`, 5000) + strings.Repeat("}", 5000), "not an agents file"},
		{"twice", `{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"]},{"agent":"b","sha256":"` + goodHash + `","tasks":["t2"]}]}`, "there twice"},
		{"huge", `{"tokens":[],"x":"` + strings.Repeat("a", tokens.MaxFileBytes) + `"}`, "bytes, more than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := tokens.Parse([]byte(c.data))
			if c.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, workspace.ErrInvalid) {
				t.Fatalf("Parse = %v, want an invalid-input error with %q", err, c.want)
			}
			if workspace.HintOf(err) == "" {
				t.Errorf("no hint: %v", err)
			}
		})
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts is valid
// and survives a round trip.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["t1"],"may":["claim","done"]}]}`))
	f.Add([]byte(`{"tokens":[]}`))
	f.Add([]byte(`{"tokens":[{"agent":"a","sha256":"` + goodHash + `","tasks":["*"],"global_memory":"write"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := tokens.Parse(data)
		if err != nil {
			return
		}
		for _, g := range doc.Tokens {
			if err := g.Check(); err != nil {
				t.Fatalf("accepted an invalid grant: %v", err)
			}
		}
	})
}

// TestAddLookupRevoke: a token added is found by itself and by nothing
// else, only its hash is stored, the file is private, and revoking it is
// seen by the store at the next look-up.
func TestAddLookupRevoke(t *testing.T) {
	ctx := context.Background()
	w := newWS(t)
	s, err := tokens.NewStore(w.Root())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("wsd_nothing"); !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("look-up without a file: %v", err)
	}
	tok, g, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "planner", Tasks: []string{"t1"}, May: []string{tokens.RightPlan}})
	if err != nil {
		t.Fatal(err)
	}
	tok2, _, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "worker", Tasks: []string{tokens.AllTasks}, May: []string{tokens.RightClaim, tokens.RightDone}, GlobalMemory: tokens.GlobalRead})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, tokens.Prefix) || len(tok) != len(tokens.Prefix)+43 || tok == tok2 {
		t.Fatalf("tokens %q, %q", tok, tok2)
	}
	data, err := os.ReadFile(filepath.Join(w.Dir(), tokens.File))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), tok) || strings.Contains(string(data), tok[len(tokens.Prefix):]) || !strings.Contains(string(data), tokens.Hash(tok)) {
		t.Fatalf("the file holds the token, or not its hash:\n%s", data)
	}
	fi, err := os.Stat(filepath.Join(w.Dir(), tokens.File))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	got, err := s.Lookup(tok)
	if err != nil || got.Agent != "planner" || !got.Can(tokens.RightPlan) || got.Can(tokens.RightClaim) || !got.Task("t1") || got.Task("t2") || got.ReadGlobal() {
		t.Fatalf("Lookup = %+v, %v", got, err)
	}
	if got.ID() != g.ID() || !strings.HasPrefix(g.ID(), "tk_") {
		t.Fatalf("ids %s, %s", got.ID(), g.ID())
	}
	got2, err := s.Lookup(tok2)
	if err != nil || got2.Agent != "worker" || !got2.Task("anything") || !got2.ReadGlobal() || got2.WriteGlobal() {
		t.Fatalf("Lookup worker = %+v, %v", got2, err)
	}
	for _, bad := range []string{"", tok + "x", tok[:len(tok)-1], strings.ToUpper(tok), tokens.Hash(tok)} {
		if _, err := s.Lookup(bad); !errors.Is(err, tokens.ErrUnknown) {
			t.Errorf("Lookup(%q) = %v, want ErrUnknown", bad, err)
		}
	}
	gone, err := tokens.Revoke(ctx, tokens.Tree(w), g.ID(), "")
	if err != nil || len(gone) != 1 || gone[0].Agent != "planner" {
		t.Fatalf("Revoke = %+v, %v", gone, err)
	}
	if _, err := s.Lookup(tok); !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("a revoked token: %v", err)
	}
	if _, err := s.Lookup(tok2); err != nil {
		t.Fatalf("the other token after a revocation: %v", err)
	}
	if _, err := tokens.Revoke(ctx, tokens.Tree(w), "tk_000000000000", ""); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("revoking an unknown id: %v", err)
	}
	if _, err := tokens.Revoke(ctx, tokens.Tree(w), "", "worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(tok2); !errors.Is(err, tokens.ErrUnknown) {
		t.Fatalf("revoked by agent: %v", err)
	}
}

// TestStoreRefusesAnUntrustedFile: a file others may read, a symlink or a
// broken file refuses every token until it is fixed.
func TestStoreRefusesAnUntrustedFile(t *testing.T) {
	ctx := context.Background()
	w := newWS(t)
	tok, _, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "a", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tokens.NewStore(w.Root())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(w.Dir(), tokens.File)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Lookup(tok); err == nil || errors.Is(err, tokens.ErrUnknown) || !strings.Contains(err.Error(), "chmod 600") && !strings.Contains(workspace.HintOf(err), "chmod 600") {
			t.Errorf("mode %04o: %v", mode, err)
		}
		if _, err := tokens.NewStore(w.Root()); err == nil {
			t.Errorf("mode %04o: NewStore accepted it", mode)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(tok); err != nil {
		t.Fatalf("private again: %v", err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, '{'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(tok); err == nil || !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("a broken file: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(secret, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(tok); err == nil || !errors.Is(err, workspace.ErrUnsafe) {
		t.Fatalf("a symlink: %v", err)
	}
	if _, _, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "b", Tasks: []string{"t1"}}); err == nil {
		t.Fatal("Add wrote through a symlinked agents file")
	}
}

// TestConcurrentAdds: tokens added at once from many goroutines are all
// kept (the file is changed under its lock).
func TestConcurrentAdds(t *testing.T) {
	ctx := context.Background()
	w := newWS(t)
	var wg sync.WaitGroup
	toks := make([]string, 16)
	for i := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, _, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "a", Tasks: []string{"t1"}})
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		}()
	}
	wg.Wait()
	doc, err := tokens.Read(w.Root())
	if err != nil || len(doc.Tokens) != len(toks) {
		t.Fatalf("%d tokens, %v", len(doc.Tokens), err)
	}
	s, _ := tokens.NewStore(w.Root())
	for _, tok := range toks {
		if _, err := s.Lookup(tok); err != nil {
			t.Errorf("lost %s: %v", tok, err)
		}
	}
	if _, _, err := tokens.Add(ctx, tokens.Tree(w), tokens.Grant{Agent: "a"}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("a grant without tasks: %v", err)
	}
}

// TestLifecycle: expiry, rotation, last use and the watch on the agents
// file.
func TestLifecycle(t *testing.T) { tokenstest.Lifecycle(t, tokens.Tree(newWS(t))) }
