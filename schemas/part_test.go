package schemas

import (
	"errors"
	"strings"
	"testing"
)

// ValidateAt checks a value against a subschema as Validate checks a
// document, locating each problem in the document, and refuses a kind or
// a pointer it does not know.
func TestValidateAt(t *testing.T) {
	t.Parallel()
	const entry = "/properties/subtasks/additionalProperties"
	for _, tc := range []struct {
		name, kind, pointer, data string
		want                      string // "" when valid
	}{
		{"a valid entry", "state", entry, `{"status": "pending"}`, ""},
		{"a bad status", "state", entry, `{"status": "done"}`, "state: /subtasks/st_1/status: enum"},
		{"a bad time", "state", entry, `{"status": "completed", "completed_at": "yesterday"}`, "/subtasks/st_1/completed_at: format"},
		{"a missing field", "state", entry, `{}`, "/subtasks/st_1: required"},
		{"null", "state", entry, `null`, "/subtasks/st_1: type"},
		{"a valid key", "state", "/properties/subtasks/propertyNames", `"st_1"`, ""},
		{"a bad key", "state", "/properties/subtasks/propertyNames", `"a b"`, "/subtasks/st_1: pattern"},
		{"not JSON", "state", entry, `{"status": `, "state: invalid JSON"},
		{"an unknown kind", "nope", entry, `{}`, "unknown"},
		{"an unknown pointer", "state", "/properties/nothing", `{}`, "compile schema state at /properties/nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateAt(Kind(tc.kind), tc.pointer, "/subtasks/st_1", []byte(tc.data))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if err := ValidateAt(KindState, "/properties/subtasks/additionalProperties", "/subtasks/x", []byte(`{"status": 1}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("a value breaking the subschema: %v, want ErrInvalid", err)
	}
}
