package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzKeyEncoding: every valid key round-trips through its file name, no
// file name leaves its directory, and DecodeKey accepts only canonical
// names.
func FuzzKeyEncoding(f *testing.F) {
	for _, s := range []string{"arc_task", "arc/task", ".hidden", "..", ".", "../../etc/passwd", "%2E", "%2e", "a%41", "é", "a b", "\x00", "%", strings.Repeat("/", 90)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := EncodeKey(s)
		if strings.ContainsRune(enc, '/') || strings.HasPrefix(enc, ".") || enc == "." || enc == ".." || strings.ContainsRune(enc, 0) {
			t.Fatalf("EncodeKey(%q) = %q can name something outside its directory", s, enc)
		}
		if s != "" && filepath.Dir(filepath.Join("scope", enc+".json")) != "scope" {
			t.Fatalf("EncodeKey(%q) = %q leaves the scope directory", s, enc)
		}
		if ValidateKey(s) == nil {
			back, err := DecodeKey(enc)
			if err != nil || back != s {
				t.Fatalf("DecodeKey(EncodeKey(%q)) = %q, %v", s, back, err)
			}
			if len(enc)+len(".json") > 255 {
				t.Fatalf("valid key %q gives a %d-byte file name", s, len(enc)+5)
			}
		}
		if k, err := DecodeKey(s); err == nil {
			if EncodeKey(k) != s {
				t.Fatalf("DecodeKey(%q) = %q, but that key encodes to %q", s, k, EncodeKey(k))
			}
			if ValidateKey(k) != nil {
				t.Fatalf("DecodeKey(%q) = %q, an invalid key", s, k)
			}
		}
	})
}

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
	sc := Scope{Kind: ScopeGlobal}
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
			if gerr.Error() == "" || !(errors.Is(gerr, ErrInvalid) || errors.Is(gerr, ErrUnsafe)) {
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
		want := ManifestItem{Key: e.Key, ShortDescription: e.ShortDescription, StoredBy: e.StoredBy, UpdatedAt: e.UpdatedAt, Version: e.Version, Size: int64(len(data))}
		if got := items[0]; got.Key != want.Key || got.ShortDescription != want.ShortDescription || got.StoredBy != want.StoredBy ||
			!got.UpdatedAt.Equal(want.UpdatedAt) || got.Version != want.Version || got.Size != want.Size {
			t.Fatalf("streamed manifest %+v != full parse %+v", got, want)
		}
	})
}

// FuzzParseEvent: a formatted event parses back to itself, and no line
// makes ParseEvent panic.
func FuzzParseEvent(f *testing.F) {
	f.Add(int64(1705312800123), "task_created", "t1", "st_1", "", "key", "arc task", "2024-01-15T10:00:00.123Z e t1")
	f.Add(int64(0), "", "a=b", "\"q\"", "two\nlines", "a b", "", `x "y" k="v w" "q k"=1`)
	f.Add(int64(-5), "e", "t", "\xff", "=", "=", "=", `2024-01-15T10:00:00Z e t "\x`)
	f.Fuzz(func(t *testing.T, ms int64, name, task, arg1, arg2, key, val, line string) {
		if e, err := ParseEvent(line); err == nil {
			if _, err := ParseEvent(FormatEvent(e)); err != nil {
				t.Fatalf("ParseEvent(%q) = %+v, which does not format back to a line: %v", line, e, err)
			}
		}
		const maxMs = 253402300799999 // 9999-12-31T23:59:59.999Z
		if ms < 0 {
			ms = -(ms + 1)
		}
		ms %= maxMs + 1
		e := Event{Time: time.UnixMilli(ms).UTC(), Name: name, TaskID: task, Args: []string{arg1, arg2}}
		if key != "" || val != "" {
			e.Attrs = map[string]string{key: val}
		}
		line = FormatEvent(e)
		if strings.ContainsAny(line, "\n\r") {
			t.Fatalf("FormatEvent wrote a line break: %q", line)
		}
		back, err := ParseEvent(line)
		if err != nil {
			t.Fatalf("ParseEvent(FormatEvent(%#v)) = %v (line %q)", e, err, line)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip of %q:\n got %#v\nwant %#v", line, back, e)
		}
	})
}
