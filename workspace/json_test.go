package workspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
)

// The model encodes what it builds as the file store writes it: the same
// bytes as atomicfile.Marshal.
func TestMarshalCanonicalIsAtomicfiles(t *testing.T) {
	for name, v := range map[string]any{
		"map":    map[string]any{"b": 1, "a": "<tag> & \"quote\"", "c": []any{1.5, nil, true}},
		"thread": Thread{ID: "th_1", TaskID: "t1", From: "a", To: "b", Message: "x < y", CreatedAt: time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC), Status: "active"},
		"empty":  struct{}{},
	} {
		got, err := marshalCanonical(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := atomicfile.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: model encodes\n%s\natomicfile encodes\n%s", name, got, want)
		}
	}
}

// checkMemoryValueSlowly is CheckMemoryValue and the store's compaction
// as they were before the one pass, encoding/json's: what
// CheckMemoryValue and CompactValue must match.
func checkMemoryValueSlowly(v json.RawMessage, lim LimitSettings) (json.RawMessage, error) {
	if len(v) == 0 {
		return nil, FieldErr(ErrInvalid, "value", FieldValue, `give a JSON object, e.g. {"theme":"dark"}`, "missing value")
	}
	if len(v) > lim.ValueMaxBytes {
		return nil, FieldErr(ErrInvalid, "value", FieldValue, "store large data as several items",
			"value is %d bytes, over the %d-byte limit", len(v), lim.ValueMaxBytes)
	}
	raw, err := ParseValue(v, lim.MaxDepth)
	if err != nil {
		if HintOf(err) == "" {
			return nil, FieldErr(ErrInvalid, "value", FieldValue, `give one JSON object, e.g. {"theme":"dark"}`, "%s", Reason(err))
		}
		return nil, err
	}
	if raw[0] != '{' {
		return nil, FieldErr(ErrInvalid, "value", FieldValue, `wrap it in an object, e.g. {"value": ...}`, "a memory item's value is a JSON object")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		// What the store's compaction refused: text after the value
		// that the decoder's check does not see ("{}}").
		return nil, FieldErr(ErrInvalid, "value", FieldValue, "give a JSON object", "%v", err)
	}
	return out.Bytes(), nil
}

// FuzzCompactMemoryValue: the one pass takes and refuses the values the
// checks of encoding/json did, with the same error, and compacts them to
// the same bytes.
func FuzzCompactMemoryValue(f *testing.F) {
	for _, s := range []string{`{"theme":"dark"}`, ` { "a" : [1, 2.50, -0, 1e+9], "a": null } `, `{"s":"\u00e9\n\ud83d\ude00<&>"}`, `{"s":"\ud800"}`,
		"{\"s\":\"\xff\"}", `[1]`, `"x"`, `{} {}`, `{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{}}}}}}}}}}`, `{"a":"\"}`, `{"a":1,}`, ``, `null`, "\t{}\n"} {
		f.Add([]byte(s))
	}
	lim := LimitSettings{ValueMaxBytes: 200, MaxDepth: 6}
	f.Fuzz(func(t *testing.T, v []byte) {
		err := CheckMemoryValue(v, lim)
		want, werr := checkMemoryValueSlowly(v, lim)
		if (err == nil) != (werr == nil) || (err != nil && (err.Error() != werr.Error() || HintOf(err) != HintOf(werr))) {
			t.Fatalf("%q: error %v, before %v", v, err, werr)
		}
		if err != nil {
			return
		}
		if got, ok := CompactValue(v); !ok || !bytes.Equal(got, want) {
			t.Fatalf("%q: compacted %q (%v), before %q", v, got, ok, want)
		}
	})
}

// FuzzCompactMemoryPut: a put checked and compacted in one pass is
// refused as CheckMemoryPut refuses it, and else gives its value as
// json.Compact does.
func FuzzCompactMemoryPut(f *testing.F) {
	f.Add("users/42", "prefs", []byte(` { "theme" : "dark" } `), 60, 0, false)
	f.Add("a", "k", []byte(`{"a":[1, 2]}`), -1, 0, false)
	f.Add("a", "k", []byte(`{}}`), 0, 2, true)
	f.Add("a\x00b", "k\xff", []byte(`[1]`), 0, -1, false)
	lim := LimitSettings{ValueMaxBytes: 200, MaxDepth: 6}
	f.Fuzz(func(t *testing.T, ns, key string, v []byte, ttl, ifVersion int, ifAbsent bool) {
		req := MemoryPutRequest{Namespace: Namespace(strings.Split(ns, "/")), Key: key, Value: v, TTLSeconds: ttl, IfVersion: ifVersion, IfAbsent: ifAbsent, Agent: "po"}
		got, err := CompactMemoryPut(req, lim, nil)
		werr := CheckMemoryPut(req, lim)
		if (err == nil) != (werr == nil) || (err != nil && (err.Error() != werr.Error() || HintOf(err) != HintOf(werr))) {
			t.Fatalf("%+v: error %v, CheckMemoryPut %v", req, err, werr)
		}
		if err != nil {
			return
		}
		var want bytes.Buffer
		if json.Compact(&want, v) != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q: compacted %q, json.Compact %q", v, got, want.Bytes())
		}
	})
}

// FuzzNamespaceString: a namespace is named by json.Marshal's bytes.
func FuzzNamespaceString(f *testing.F) {
	for _, s := range []string{"users/42/prefs", "", "<b>/&/\"q\"", "é/\x00/\u2028", "a\\b/\x7f/~"} {
		f.Add(s, false)
	}
	f.Add("", true)
	f.Fuzz(func(t *testing.T, s string, null bool) {
		ns := Namespace(strings.Split(s, "/"))
		if null {
			ns = nil
		}
		want, _ := json.Marshal([]string(ns))
		if got := ns.String(); got != string(want) {
			t.Fatalf("%q: %s, json.Marshal %s", ns, got, want)
		}
	})
}

// checkDepthByteByByte is CheckDepth as it was, a byte at a time.
func checkDepthByteByByte(data []byte, max int) error {
	depth, inStr, esc := 0, false, false
	for i, c := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				return &Error{Kind: ErrUnsafe, Op: "parse JSON", Msg: fmt.Sprintf("nested deeper than %d levels (at byte %d)", max, i)}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// FuzzCheckDepth: CheckDepth, which skips strings by their quotes, says
// what the byte-by-byte scan said.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{"a":[{"b":"]\"[[["}]}`, `["\\", [[[`, `"\\\"[[[[`, `[[["`, `{"a\\\\\\":"[["}`, `]]][[[`} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		got, want := CheckDepth(data, max), checkDepthByteByByte(data, max)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q within %d: %v, byte by byte %v", data, max, got, want)
		}
	})
}
