package workspace

import (
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
