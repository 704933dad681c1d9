package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// scopes returns one scope of every kind, with what each needs existing.
func scopes(t *testing.T, w *Store) map[string]workspace.Scope {
	t.Helper()
	newTask(t, w, "t1")
	return map[string]workspace.Scope{
		"thread":  {Kind: workspace.ScopeThread, TaskID: "t1"},
		"session": {Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: "th1"},
		"agent":   {Kind: workspace.ScopeAgent, Agent: "solver"},
		"global":  {Kind: workspace.ScopeGlobal},
	}
}

func TestEntryLifecycleAllScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, s := range map[string]workspace.ScopeKind{"thread": workspace.ScopeThread, "session": workspace.ScopeSession, "agent": workspace.ScopeAgent, "global": workspace.ScopeGlobal} {
		t.Run(name, func(t *testing.T) {
			w, c := newWS(t)
			sc := scopes(t, w)[string(s)]
			dir, err := sc.Dir()
			if err != nil {
				t.Fatal(err)
			}

			r, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "the puzzle", Value: json.RawMessage(`{"a":1}`), Agent: "solver"})
			if err != nil {
				t.Fatalf("store: %v", err)
			}
			if r.Entry.Version != 1 || !r.Entry.CreatedAt.Equal(t0) || !r.Entry.UpdatedAt.Equal(t0) {
				t.Errorf("first store = %+v, want version 1 at %v", r.Entry, t0)
			}
			if _, err := os.Stat(filepath.Join(w.Dir(), dir, "arc_task.json")); err != nil {
				t.Errorf("entry file missing: %v", err)
			}

			c.advance(time.Minute)
			r, err = w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "replaced", Value: json.RawMessage(`[1,2]`), Agent: "other"})
			if err != nil {
				t.Fatalf("replace: %v", err)
			}
			if r.Entry.Version != 2 || !r.Entry.CreatedAt.Equal(t0) || !r.Entry.UpdatedAt.Equal(t0.Add(time.Minute)) {
				t.Errorf("replace = %+v, want version 2, created_at kept", r.Entry)
			}

			e, err := w.GetEntry(ctx, sc, "arc_task")
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if string(e.Value) != `[1,2]` || e.ShortDescription != "replaced" || e.StoredBy != "other" || e.Version != 2 {
				t.Errorf("get = %+v", e)
			}

			// Update with only a description keeps the value.
			c.advance(time.Minute)
			r, err = w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "arc_task", Description: ptr("new words"), Agent: "solver"})
			if err != nil {
				t.Fatalf("update description: %v", err)
			}
			if string(r.Entry.Value) != `[1,2]` || r.Entry.Version != 3 || r.Entry.ShortDescription != "new words" {
				t.Errorf("update description = %+v", r.Entry)
			}
			// Update with only a value keeps the description.
			r, err = w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "arc_task", Value: json.RawMessage(`"x"`), Agent: "solver", IfVersion: 3})
			if err != nil {
				t.Fatalf("update value: %v", err)
			}
			if string(r.Entry.Value) != `"x"` || r.Entry.ShortDescription != "new words" || r.Entry.Version != 4 || !r.Entry.CreatedAt.Equal(t0) {
				t.Errorf("update value = %+v", r.Entry)
			}
			// A stale if_version is a conflict and changes nothing.
			before := listing(t, w.Dir())
			_, err = w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "arc_task", Value: json.RawMessage(`1`), Agent: "solver", IfVersion: 3})
			if !errors.Is(err, workspace.ErrConflict) {
				t.Errorf("stale if_version: err = %v, want ErrConflict", err)
			}
			if after := listing(t, w.Dir()); after != before {
				t.Errorf("a refused update changed the tree")
			}
			if _, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "missing", Value: json.RawMessage(`1`), Agent: "solver"}); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("update missing: err = %v, want ErrNotFound", err)
			}
			if _, err := w.GetEntry(ctx, sc, "missing"); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("get missing: err = %v, want ErrNotFound", err)
			}

			if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "b/c", Description: "second", Value: json.RawMessage(`null`), Agent: "solver"}); err != nil {
				t.Fatalf("store second: %v", err)
			}
			items, err := w.ListEntries(ctx, sc)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(items) != 2 || items[0].Key != "arc_task" || items[1].Key != "b/c" {
				t.Fatalf("list = %+v", items)
			}
			st, _ := os.Stat(filepath.Join(w.Dir(), dir, "arc_task.json"))
			if items[0].Version != 4 || items[0].ShortDescription != "new words" || items[0].Size != st.Size() || !items[0].UpdatedAt.Equal(t0.Add(2*time.Minute)) {
				t.Errorf("manifest item = %+v (file size %d)", items[0], st.Size())
			}

			if err := w.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "arc_task", Agent: "solver"}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := w.GetEntry(ctx, sc, "arc_task"); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("get after delete: err = %v, want ErrNotFound", err)
			}
			if err := w.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "arc_task", Agent: "solver"}); !errors.Is(err, workspace.ErrNotFound) {
				t.Errorf("delete missing: err = %v, want ErrNotFound", err)
			}
			if got := workspace.HintOf(err); false && got == "" {
				t.Log(got)
			}
		})
	}
}

func TestEntryNullValueRoundTrips(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	ctx := context.Background()
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`null`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	e, err := w.GetEntry(ctx, sc, "k")
	if err != nil {
		t.Fatalf("get of a null value: %v", err)
	}
	if string(e.Value) != "null" {
		t.Errorf("value = %s, want null", e.Value)
	}
	if _, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Description: ptr("d"), Agent: "a"}); err != nil {
		t.Errorf("update of a null value: %v", err)
	}
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if e, _ := w.GetEntry(ctx, sc, "k"); e.Version != 3 {
		t.Errorf("version after store over a null value = %d, want 3 (created_at and version kept)", e.Version)
	}
}

func TestEntryEvents(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	ctx := context.Background()
	newTask(t, w, "t1")
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "solver"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "solver"}); err != nil {
		t.Fatal(err)
	}
	if err := w.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "k", Agent: "solver"}); err != nil {
		t.Fatal(err)
	}
	evs, bad, err := w.ReadEvents(ctx, "t1")
	if err != nil || len(bad) > 0 {
		t.Fatalf("ReadEvents: %v %v", err, bad)
	}
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
		if e.Name != "task_created" && (e.Attrs["key"] != "k" || e.Attrs["agent"] != "solver") {
			t.Errorf("event %s attrs = %v, want key and agent", e.Name, e.Attrs)
		}
	}
	want := []string{"task_created", "env_stored", "env_updated", "env_deleted"}
	if len(names) != len(want) {
		t.Fatalf("events = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("event %d = %s, want %s", i, names[i], want[i])
		}
	}
}

// TestCanonicalEntryBytes pins the exact bytes of an entry file.
func TestCanonicalEntryBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		value string
	}{
		{"object", `{"task_id":"training-001","input_grid":[[0,1],[2,3]]}`},
		{"html", `{"expr":"a<b && c>d"}`},
		{"spaced", "  [ 1 ,\n 2 ]  "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var files [2][]byte
			for i := range files {
				w, _ := newWS(t)
				sc := workspace.Scope{Kind: workspace.ScopeGlobal}
				if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "arc_task", Description: "The puzzle <3x3> & more", Value: json.RawMessage(tc.value), Agent: "solver"}); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(w.Dir(), "memory/global/arc_task.json"))
				if err != nil {
					t.Fatal(err)
				}
				files[i] = data
			}
			if !bytes.Equal(files[0], files[1]) {
				t.Fatalf("the same data written twice differs:\n%s\n%s", files[0], files[1])
			}
			got := files[0]
			if !bytes.HasSuffix(got, []byte("}\n")) {
				t.Errorf("no trailing newline")
			}
			if bytes.Contains(got, []byte(`\u003c`)) || bytes.Contains(got, []byte(`\u0026`)) {
				t.Errorf("HTML-escaped: %s", got)
			}
			if i, j := bytes.Index(got, []byte(`"value"`)), bytes.Index(got, []byte(`"version"`)); i < j {
				t.Errorf("value is not written last")
			}
			if !bytes.Contains(got, []byte("\n  \"key\": \"arc_task\",\n")) {
				t.Errorf("not indented with two spaces: %s", got)
			}
			golden := filepath.Join("testdata", "entry_"+tc.name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("bytes differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestKeyEncodingExamples(t *testing.T) {
	t.Parallel()
	cases := []struct{ key, file string }{
		{"arc_task", "arc_task.json"},
		{"arc/task", "arc%2Ftask.json"},
		{".hidden", "%2Ehidden.json"},
		{"a.b", "a.b.json"},
		{"..", "%2E..json"},
		{"../../etc/passwd", "%2E.%2F..%2Fetc%2Fpasswd.json"},
		{"with space", "with%20space.json"},
		{"é", "%C3%A9.json"},
		{"100%", "100%25.json"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if got := workspace.EncodeKey(tc.key) + ".json"; got != tc.file {
				t.Errorf("EncodeKey(%q) = %q, want %q", tc.key, got, tc.file)
			}
			back, err := workspace.DecodeKey(tc.file[:len(tc.file)-len(".json")])
			if err != nil || back != tc.key {
				t.Errorf("DecodeKey = %q, %v; want %q", back, err, tc.key)
			}
			w, _ := newWS(t)
			if _, err := w.StoreEntry(context.Background(), workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: tc.key, Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(w.Dir(), "memory", "global", tc.file)); err != nil {
				t.Errorf("stored file not where expected: %v", err)
			}
		})
	}
}

func TestListSkipsForeignAndFallsBack(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	ctx := context.Background()
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	dir := filepath.Join(w.Dir(), "memory", "global")
	files := map[string]string{
		// value first: parsed whole.
		"reordered.json": `{"value": {"big": true}, "version": 3, "key": "reordered", "short_description": "d", "stored_by": "x", "created_at": "2024-01-15T10:00:00Z", "updated_at": "2024-01-15T10:00:00Z"}`,
		"corrupt.json":   `{"key": "corrupt", `,
		"wrongkey.json":  `{"key": "other", "short_description": "", "stored_by": "x", "updated_at": "2024-01-15T10:00:00Z", "version": 1, "value": 1}`,
		"bad%zz.json":    `{}`,
		"notes.txt":      `x`,
		".tmp-123":       `x`,
	}
	for n, d := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	items, skipped, err := w.ListEntriesReport(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Key != "reordered" || items[0].Version != 3 {
		t.Errorf("items = %+v, want only the reordered entry", items)
	}
	skippedFiles := map[string]bool{}
	for _, s := range skipped {
		skippedFiles[path.Base(s.File)] = true
		if s.Reason == "" {
			t.Errorf("skipped %s without a reason", s.File)
		}
	}
	for _, n := range []string{"corrupt.json", "wrongkey.json", "bad%zz.json", "link.json", "fifo.json"} {
		if !skippedFiles[n] {
			t.Errorf("%s not reported as skipped (skipped: %v)", n, skipped)
		}
	}
	if _, err := w.GetEntry(ctx, sc, "link"); !errors.Is(err, workspace.ErrUnsafe) {
		t.Errorf("get through a symlink: err = %v, want ErrUnsafe", err)
	}
}

func TestListMissingScopeIsEmpty(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	items, err := w.ListEntries(context.Background(), workspace.Scope{Kind: workspace.ScopeAgent, Agent: "nobody"})
	if err != nil || len(items) != 0 || items == nil {
		t.Errorf("list of an empty scope = %v, %v; want an empty non-nil list", items, err)
	}
	if _, err := w.ListEntries(context.Background(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: "nope"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("list of a missing task: err = %v, want ErrNotFound", err)
	}
}

func TestValueWarning(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	big := append(append([]byte(`"`), bytes.Repeat([]byte("a"), workspace.DefaultValueWarnBytes+1)...), '"')
	r, err := w.StoreEntry(context.Background(), workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "big", Value: big, Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 {
		t.Errorf("warnings = %v, want one size warning", r.Warnings)
	}
}

// TestListAndGetAgree: files that a streamed reader and a whole-file parse
// would read differently are refused by both, never read two ways.
func TestListAndGetAgree(t *testing.T) {
	t.Parallel()
	const head = `"stored_by":"a","updated_at":"2024-01-15T10:00:00Z","version":1`
	cases := map[string]string{
		"other key":              `{"key":"j","short_description":"d",` + head + `,"value":1}`,
		"case variant":           `{"key":"k","short_description":"d",` + head + `,"SHORT_DESCRIPTION":"e","value":1}`,
		"folded variant":         `{"key":"k","short_description":"d",` + head + `,"\u212aey":"j","value":1}`,
		"duplicate after value":  `{"key":"k","short_description":"d",` + head + `,"value":1,"short_description":"e"}`,
		"duplicate before value": `{"key":"k","short_description":"d","short_description":"e",` + head + `,"value":1}`,
		"escaped duplicate":      `{"key":"k","short_description":"d",` + head + `,"value":1,"ke\u0079":"j"}`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			w, _ := newWS(t)
			ctx := context.Background()
			sc := workspace.Scope{Kind: workspace.ScopeGlobal}
			if err := os.WriteFile(filepath.Join(w.Dir(), "memory/global/k.json"), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if e, err := w.GetEntry(ctx, sc, "k"); !errors.Is(err, workspace.ErrInvalid) {
				t.Errorf("get = %+v, %v; want ErrInvalid", e, err)
			}
			items, skipped, err := w.ListEntriesReport(ctx, sc)
			if strings.Contains(name, "after value") || strings.Contains(name, "escaped") {
				// The manifest never reads past the value, so it lists
				// what precedes it; get, which reads it all, refuses.
				if err != nil || len(items)+len(skipped) != 1 || len(items) == 1 && items[0].ShortDescription != "d" {
					t.Errorf("list = %+v, skipped %v, %v", items, skipped, err)
				}
				return
			}
			if err != nil || len(items) != 0 || len(skipped) != 1 {
				t.Errorf("list = %+v, skipped %v, %v; want the file skipped", items, skipped, err)
			}
		})
	}
}

// TestConcurrentUpdatesLoseNothing: goroutines appending to one array value
// with read-modify-write updates under the key's lock lose no item.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	ctx := context.Background()
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "list", Value: json.RawMessage(`[]`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				for {
					e, err := w.GetEntry(ctx, sc, "list")
					if err != nil {
						errs <- err
						return
					}
					var items []string
					_ = json.Unmarshal(e.Value, &items)
					items = append(items, fmt.Sprintf("%d-%d", g, i))
					v, _ := json.Marshal(items)
					_, err = w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "list", Value: v, Agent: "a", IfVersion: e.Version})
					if errors.Is(err, workspace.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := w.GetEntry(ctx, sc, "list")
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	if err := json.Unmarshal(e.Value, &items); err != nil || len(items) != workers*each || e.Version != workers*each+1 {
		t.Errorf("%d items at version %d (%v), want %d at %d", len(items), e.Version, err, workers*each, workers*each+1)
	}
}
