package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// FuzzValidate feeds arbitrary bytes to every kind: Validate must never
// panic, and its answer must agree with the input (only well-formed UTF-8
// JSON within the limits is ever accepted; a schema error names at least
// one problem with a rule).
func FuzzValidate(f *testing.F) {
	for i, k := range kinds {
		b, err := os.ReadFile(filepath.Join("testdata", "valid", string(k)+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte(`{"lock_timeout":"1h2m3.5s","mode":"private"}`))
	f.Add(uint8(12), []byte(`{"seq":1,"taken_at":"2024-01-15T10:00:00Z","file":".claim.w","kind":"claim","marker":{}}`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		k := kinds[int(which)%len(kinds)]
		err := Validate(k, data)
		if err == nil {
			if !utf8.Valid(data) || !json.Valid(data) {
				t.Fatalf("accepted bytes that are not UTF-8 JSON: %q", data)
			}
			return
		}
		var ve *Error
		var se *SyntaxError
		switch {
		case errors.As(err, &ve):
			if !json.Valid(data) {
				t.Fatalf("schema error for invalid JSON %q", data)
			}
			if len(ve.Problems) == 0 || ve.Problems[0].Rule == "" || ve.Error() == "" {
				t.Fatalf("empty problems: %#v", ve)
			}
		case errors.As(err, &se):
			if se.Offset < 0 || se.Offset > int64(len(data)) || se.Line < 1 || se.Column < 1 {
				t.Fatalf("syntax error out of range: %+v", se)
			}
			if utf8.Valid(data) && json.Valid(data) {
				t.Fatalf("syntax error %v for valid JSON %q", err, data)
			}
		case errors.Is(err, ErrTooDeep), errors.Is(err, ErrTooLarge):
		default:
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
	})
}
