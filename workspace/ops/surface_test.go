package ops

import (
	"errors"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestSurfaces: each door's env hint names that door's call, and a name
// that is no door is refused saying which there are.
func TestSurfaces(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want string
	}{
		{"", "call list_env_data()"},
		{"mcp", "call list_env_data()"},
		{"cli", "run `workspaced env list --task t1`"},
		{"http", "GET /api/v1/tasks/t1/env"},
		{"files", "read tasks/t1/env/"},
	} {
		s, err := ParseSurface(c.name)
		if err != nil {
			t.Fatalf("%q: %v", c.name, err)
		}
		if got := envHint(s, "t1"); !strings.Contains(got, c.want) || !strings.HasPrefix(got, "Shared environment data is available — ") {
			t.Errorf("%q: %q, want %q in it", c.name, got, c.want)
		}
	}
	_, err := ParseSurface("python")
	if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(workspace.HintOf(err), "cli, mcp, http or files") {
		t.Errorf("ParseSurface(python) = %v", err)
	}
}
