package workspace

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The -update flag may be defined by another test file of this package;
// define it only when nobody has (package variables run before init).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

var fixtureNow = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

func TestCutText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii", "abcdef", 3, "abc…"},
		{"inside a rune", "aé", 2, "a…"},
		{"after a rune", "aéb", 3, "aé…"},
		{"trailing space trimmed", "ab cd", 3, "ab…"},
		{"three-byte rune", "x→y", 3, "x…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cutText(tc.in, tc.max); got != tc.want {
				t.Errorf("cutText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

func TestUniversalCapabilitiesNamed(t *testing.T) {
	want := []string{"store_env_data", "get_env_data", "list_env_data", "update_env_data", "delete_env_data",
		"store_memory", "get_memory", "list_memory", "delete_memory",
		"get_task", "get_task_state", "get_plan", "get_subtask", "get_output", "list_reviews", "get_review",
		"write_plan", "write_review", "claim_subtask", "signal_done",
		"get_delegation_context", "list_capabilities", "skills"}
	var got []string
	for _, c := range UniversalCapabilities {
		got = append(got, c.Name)
		if c.Description == "" || strings.Contains(c.Description, "\n") {
			t.Errorf("%s: description %q is not one line", c.Name, c.Description)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
