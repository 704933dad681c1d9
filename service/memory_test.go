package service_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// TestMemory: the namespaced memory's operations through the layer every
// door calls, on a workspace of every kind opened from its root.
func TestMemory(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			st, err := service.Open(ctx, root(t, k.kind), service.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ns := workspace.Namespace{"users", "42"}
			it, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: ns, Key: "prefs", Value: json.RawMessage(`{"theme":"dark"}`), Agent: "po", IfAbsent: true})
			if err != nil || it.Version != 1 {
				t.Fatalf("put: %+v %v", it, err)
			}
			_, err = service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: ns, Key: "prefs", Value: json.RawMessage(`{}`), Agent: "po", IfVersion: 7})
			var ve *workspace.VersionError
			if !errors.Is(err, workspace.ErrConflict) || !errors.As(err, &ve) || ve.Current != 1 {
				t.Fatalf("stale put: %v", err)
			}
			if got, err := service.MemoryGet(ctx, st, ns, "prefs"); err != nil || string(got.Value) != `{"theme":"dark"}` {
				t.Fatalf("get: %+v %v", got, err)
			}
			f, err := service.MemoryFilter(st, []byte(`{"theme":{"$eq":"dark"}}`))
			if err != nil {
				t.Fatal(err)
			}
			items, err := service.MemorySearch(ctx, st, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"users"}, Filter: f})
			if err != nil || len(items) != 1 || items[0].Key != "prefs" {
				t.Fatalf("search: %+v %v", items, err)
			}
			if _, err := service.MemoryFilter(st, []byte(`{"theme":{"$regex":"d"}}`)); !errors.Is(err, workspace.ErrInvalid) {
				t.Fatalf("unknown operator: %v", err)
			}
			nss, err := service.MemoryNamespaces(ctx, st, workspace.NamespaceQuery{Suffix: []string{"*"}, MaxDepth: 1})
			if err != nil || len(nss) != 1 || nss[0][0] != "users" {
				t.Fatalf("namespaces: %v %v", nss, err)
			}
			if err := service.MemoryDelete(ctx, st, workspace.MemoryDeleteRequest{Namespace: ns, Key: "prefs", IfVersion: 1, Agent: "po"}); err != nil {
				t.Fatal(err)
			}
			var names []string
			if _, err := service.MemoryEvents(ctx, st, 0, func(e workspace.PositionedEvent) { names = append(names, e.Name) }); err != nil {
				t.Fatal(err)
			}
			if len(names) != 2 || names[0] != "memory_stored" || names[1] != "memory_deleted" {
				t.Fatalf("memory events: %v", names)
			}
		})
	}
}

// TestMemoryTransfer: namespaced memory moves from a tree into SQLite and
// PostgreSQL and back out as the same files, byte for byte; the items
// read back the same from every store.
func TestMemoryTransfer(t *testing.T) {
	ctx := t.Context()
	src := root(t, service.Files)
	st, err := service.Open(ctx, src, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ns := range []workspace.Namespace{{"users", "42"}, {"users", "42", "prefs"}, {"ユーザー", "ü"}} {
		req := workspace.MemoryPutRequest{Namespace: ns, Key: "clé " + ns[len(ns)-1], Value: json.RawMessage(`{"n":[1,{"a":"b"}]}`), Agent: "po", TTLSeconds: i * 3600}
		if _, err := service.MemoryPut(ctx, st, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := service.MemoryDelete(ctx, st, workspace.MemoryDeleteRequest{Namespace: workspace.Namespace{"users", "42"}, Key: "clé 42", Agent: "po"}); err != nil {
		t.Fatal(err)
	}
	want, err := service.MemorySearch(ctx, st, workspace.MemorySearchRequest{Limit: 100})
	st.Close()
	if err != nil || len(want) != 2 {
		t.Fatalf("items: %+v %v", want, err)
	}
	for _, dst := range []string{"sqlite:" + filepath.Join(t.TempDir(), "moved.db"), root(t, service.PostgreSQL)} {
		if _, err := service.Import(ctx, src, dst, false); err != nil {
			t.Fatalf("import into %s: %v", dst, err)
		}
		db, err := service.Open(ctx, dst, service.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := service.MemorySearch(ctx, db, workspace.MemorySearchRequest{Limit: 100})
		db.Close()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("items in %s:\n got %+v (%v)\nwant %+v", dst, got, err, want)
		}
		out := filepath.Join(t.TempDir(), "back")
		if _, err := service.Export(ctx, dst, out); err != nil {
			t.Fatal(err)
		}
		same := func(dir string) map[string]string {
			files := map[string]string{}
			_ = filepath.WalkDir(filepath.Join(dir, "memory", "namespaces"), func(p string, d fs.DirEntry, err error) error {
				// Locks are no history; a namespace's own file is
				// written again beside its items.
				if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") && !strings.Contains(p, "/.locks/") {
					data, _ := os.ReadFile(p)
					rel, _ := filepath.Rel(dir, p)
					files[rel] = string(data)
				}
				return nil
			})
			return files
		}
		if a, b := same(src), same(out); len(a) != 3 || !reflect.DeepEqual(a, b) {
			t.Fatalf("memory exported back from %s:\n got %v\nwant %v", dst, b, a)
		}
	}
}

// BenchmarkMemory: a put of a new item, a get, and a search of a page of
// 10 under a prefix holding 100 items, on every kind of store.
func BenchmarkMemory(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			ctx := b.Context()
			st, err := service.Open(ctx, root(b, k.kind), service.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ns := workspace.Namespace{"bench", "users"}
			for i := range 100 {
				if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: ns, Key: fmt.Sprintf("seed%03d", i), Value: json.RawMessage(`{"n":1}`), Agent: "po"}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("put", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", "put"}, Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(`{"theme":"dark"}`), Agent: "po"}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("get", func(b *testing.B) {
				for b.Loop() {
					if _, err := service.MemoryGet(ctx, st, ns, "seed050"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("search", func(b *testing.B) {
				for b.Loop() {
					if items, err := service.MemorySearch(ctx, st, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"bench"}, Offset: 50}); err != nil || len(items) != 10 {
						b.Fatal(len(items), err)
					}
				}
			})
		})
	}
}
