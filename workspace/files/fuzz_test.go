package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// FuzzEntryParse puts arbitrary bytes in an entry file: listing and
// getting never panic, and when both succeed the streamed manifest agrees
// with the entry parsed whole.
func FuzzEntryParse(f *testing.F) {
	for _, s := range []string{
		`{"key":"k","short_description":"d","stored_by":"a","created_at":"2024-01-15T10:00:00Z","updated_at":"2024-01-15T10:00:00Z","version":1,"value":1}`,
		`{"value":{"x":[1,2]},"key":"k","short_description":"d","stored_by":"a","created_at":"2024-01-15T10:00:00Z","updated_at":"2024-01-15T10:00:00Z","version":2}`,
		`{"key":"k","short_description":"d","stored_by":"a","updated_at":"2024-01-15T10:00:00Z","version":1,"KEY":"j","value":1}`,
		`{"key":"k","short_description":"d","stored_by":"a","updated_at":"2024-01-15T10:00:00Z","version":1,"value":1,"key":"j"}`,
		`{"k\u0065y":"k","short_description":"d","stored_by":"a","updated_at":"2024-01-15T10:00:00Z","version":1,"value":null}`,
		`{"key":"k","short_description":"d","stored_by":"a","updated_at":"2024-01-15T10:00:00Z","version":1,"value":[[[[`,
		`{"key":null,"value":1}`,
		`[]`, ``, `{`, `"k"`, `{"key":"k","value":1}{}`,
	} {
		f.Add([]byte(s))
	}
	w, _ := newWS(f)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	file := filepath.Join(w.Dir(), "memory", "global", "k.json")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Remove first: ext4 flushes a file truncated and rewritten in
		// place on close, which would make every run wait for the disk.
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		items, skipped, lerr := w.ListEntriesReport(ctx, sc)
		if lerr != nil {
			t.Fatalf("list failed as a whole: %v", lerr)
		}
		if len(items)+len(skipped) != 1 {
			t.Fatalf("list = %v, skipped %v: want the file listed or skipped", items, skipped)
		}
		for _, s := range skipped {
			if s.Reason == "" {
				t.Fatalf("skipped without a reason")
			}
		}
		e, gerr := w.GetEntry(ctx, sc, "k")
		if gerr != nil {
			if gerr.Error() == "" || !(errors.Is(gerr, workspace.ErrInvalid) || errors.Is(gerr, workspace.ErrUnsafe)) {
				t.Fatalf("get: unclear error %v", gerr)
			}
			return
		}
		if e.Key != "k" {
			t.Fatalf("get of key k returned an entry of key %q", e.Key)
		}
		if len(items) != 1 {
			t.Fatalf("get succeeded (%+v) but list skipped the file: %v", e, skipped)
		}
		want := workspace.ManifestItem{Key: e.Key, ShortDescription: e.ShortDescription, StoredBy: e.StoredBy, UpdatedAt: e.UpdatedAt, Version: e.Version, Size: int64(len(data))}
		if got := items[0]; got.Key != want.Key || got.ShortDescription != want.ShortDescription || got.StoredBy != want.StoredBy ||
			!got.UpdatedAt.Equal(want.UpdatedAt) || got.Version != want.Version || got.Size != want.Size {
			t.Fatalf("streamed manifest %+v != full parse %+v", got, want)
		}
	})
}
