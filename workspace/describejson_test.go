package workspace

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeStrictSaysWhatIsWrong: a broken document is ErrInvalid and its
// message says what kind of break it is, a truncated one included (the
// decoder's io.ErrUnexpectedEOF alone says nothing to a person).
func TestDecodeStrictSaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"a": 1`, "invalid JSON: the document ends before it is complete"},
		{`{"a": }`, "invalid JSON at line 1, column 7"},
		{"{\n\"a\": x}", "invalid JSON at line 2, column 6"},
		{``, "empty input, expected a JSON document"},
		{`{} {}`, "trailing data after the JSON document"},
	} {
		var v map[string]any
		err := DecodeStrict("doc.json", []byte(c.doc), 16, &v)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want ErrInvalid saying %q", c.doc, err, c.want)
		}
	}
}
