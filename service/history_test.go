package service_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// TestHistoryTransfer: the kept versions of memory entries move from a
// tree into SQLite and PostgreSQL and read back the same there; exported
// back, they are the same files, byte for byte, and a version kept by the
// database after the import comes out as the file the tree would have
// kept for it.
func TestHistoryTransfer(t *testing.T) {
	ctx := t.Context()
	src := root(t, service.Files)
	st, err := service.Open(ctx, src, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	global := workspace.Scope{Kind: workspace.ScopeGlobal}
	solver := workspace.Scope{Kind: workspace.ScopeAgent, Agent: "solver"}
	put := func(st workspace.Store, sc workspace.Scope, key, value, agent string) {
		t.Helper()
		if _, err := st.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Value: json.RawMessage(value), Agent: agent}); err != nil {
			t.Fatal(err)
		}
	}
	put(st, global, "plan", `"a"`, "alice")
	put(st, global, "plan", `"b"`, "bob")
	put(st, global, "plan", `"c"`, "carol")
	put(st, global, "clé é", `1`, "alice")
	if err := st.DeleteEntry(ctx, global, workspace.DeleteRequest{Key: "clé é", Agent: "bob"}); err != nil {
		t.Fatal(err)
	}
	put(st, solver, "notes", `[1]`, "solver")
	put(st, solver, "notes", `[1,2]`, "solver")
	history := func(st workspace.Store) map[string][]workspace.Entry {
		t.Helper()
		out := map[string][]workspace.Entry{}
		for _, k := range []struct {
			sc  workspace.Scope
			key string
		}{{global, "plan"}, {global, "clé é"}, {solver, "notes"}} {
			h, err := service.EntryHistory(ctx, st, k.sc, k.key)
			if err != nil {
				t.Fatal(err)
			}
			out[k.sc.Label()+" "+k.key] = h
		}
		return out
	}
	want := history(st)
	st.Close()
	n := 0
	for _, h := range want {
		n += len(h)
	}
	if n != 4 {
		t.Fatalf("%d versions kept on the tree, want 4: %v", n, want)
	}
	for _, dst := range []string{"sqlite:" + filepath.Join(t.TempDir(), "moved.db"), root(t, service.PostgreSQL)} {
		if _, err := service.Import(ctx, src, dst, true); err != nil {
			t.Fatalf("import into %s: %v", dst, err)
		}
		db, err := service.Open(ctx, dst, service.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := history(db); !reflect.DeepEqual(got, want) {
			t.Fatalf("history in %s:\n got %+v\nwant %+v", dst, got, want)
		}
		out := filepath.Join(t.TempDir(), "back")
		if _, err := service.Export(ctx, dst, out); err != nil {
			t.Fatal(err)
		}
		if a, b := historyFiles(t, src), historyFiles(t, out); len(a) != 4 || !reflect.DeepEqual(a, b) {
			t.Fatalf("history exported back from %s:\n got %v\nwant %v", dst, b, a)
		}
		// A version the database keeps after the import is exported
		// where the tree keeps it, and the tree reads it.
		put(db, global, "plan", `"d"`, "dave")
		db.Close()
		again := filepath.Join(t.TempDir(), "again")
		if _, err := service.Export(ctx, dst, again); err != nil {
			t.Fatal(err)
		}
		tree, err := service.Open(ctx, again, service.Options{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := service.EntryHistory(ctx, tree, global, "plan")
		tree.Close()
		if err != nil || len(h) != 3 || h[2].StoredBy != "carol" || string(h[2].Value) != `"c"` {
			t.Fatalf("the tree exported after a write in %s keeps %+v (%v)", dst, h, err)
		}
	}
}

// historyFiles are the files under the .history directories of a tree's
// memory, by path.
func historyFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(filepath.Join(dir, "memory"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.Contains(p, "/.history/") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
