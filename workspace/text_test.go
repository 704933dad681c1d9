package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		name, in string
		bad      string // what the error says; "" for none
	}{
		{"plain", `{"key":"k","v":[1,"two"]}`, ""},
		{"non-ASCII", `{"key":"clé – 日本"}`, ""},
		{"escaped BMP", `{"key":"\u00e9\u2013"}`, ""},
		{"surrogate pair", `{"key":"\ud83d\ude00"}`, ""},
		{"surrogate pair upper case", `{"key":"\uD83D\uDE00"}`, ""},
		{"replacement character itself", `{"key":"\ufffd"}`, ""},
		{"escaped backslash then u", `{"key":"\\ud800"}`, ""},
		{"surrogate outside a string", `{"\\":1} \ud800`, ""},
		{"raw invalid byte", "{\"key\":\"bad\xffkey\"}", "byte 11 is 0xff"},
		{"truncated sequence", "{\"key\":\"\xc3\"}", "not valid UTF-8"},
		{"raw invalid in a name", "{\"k\xfe\":1}", "byte 3"},
		{"lone low half", `{"key":"bad\udcffkey"}`, `lone surrogate escape \udcff`},
		{"lone high half at the end", `{"key":"k\ud800"}`, `\ud800`},
		{"high half then a letter", `{"key":"\ud800x"}`, `\ud800`},
		{"two high halves", `{"key":"\ud800\ud800"}`, `\ud800`},
		{"high half then escape not u", `{"key":"\ud800\n"}`, `\ud800`},
		{"truncated escape", `{"key":"\ud8`, ""},
	} {
		err := CheckText("arguments", []byte(c.in))
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || !errors.Is(err, ErrInvalid)):
			t.Errorf("%s: %v, want an invalid-input error with %q", c.name, err, c.bad)
		}
	}
}

// FuzzCheckText: text CheckText lets through decodes with no U+FFFD that
// was not in it, literally or escaped: nothing was rewritten.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`"a"`, `"\ud83d\ude00"`, `"\udcff"`, "\"\xff\"", `{"k\ud800":1}`, `["\\ud800"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if CheckText("fuzz", data) != nil {
			return
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		got := replacements(v)
		had := bytes.Count(data, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(data), []byte(`\ufffd`))
		if got > had {
			t.Fatalf("%q passed, but decodes with %d U+FFFD, %d in the text", data, got, had)
		}
	})
}

func replacements(v any) int {
	n := 0
	switch x := v.(type) {
	case string:
		n = strings.Count(x, "\uFFFD")
	case []any:
		for _, e := range x {
			n += replacements(e)
		}
	case map[string]any:
		for k, e := range x {
			n += strings.Count(k, "\uFFFD") + replacements(e)
		}
	}
	return n
}
