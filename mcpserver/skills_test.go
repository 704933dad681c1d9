package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

func TestSkillsTool(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	ctx := context.Background()
	// No skills yet: an empty listing, not an error.
	jsonEqual(t, mustCall(t, cs, ToolSkills, map[string]any{}), `{"skills":[],"refused":[]}`)

	for name, text := range map[string]string{
		"core":  "---\ndescription: Rules for every agent\n---\nSay what you did.\n",
		"grids": "---\ndescription: Reading ARC grids\ntags: [grids]\nmodes: [analysis]\n---\n# Grids\nRow by row.\n",
		"plans": "---\ndescription: Planning\nmodes: [planning]\n---\nPlan first.\n",
	} {
		if _, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: name, Data: []byte(text)}); err != nil {
			t.Fatal(err)
		}
	}
	mode := "analysis"
	if _, err := w.UpdateThread(ctx, "t1", "th_observer", "observer", workspace.ThreadUpdate{PrimaryMode: &mode}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), "skills", "broken.md"), []byte("no front matter"), 0o644); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Skills []struct {
			Name      string   `json:"name"`
			Tags      []string `json:"tags"`
			LoadedFor string   `json:"loaded_for"`
		} `json:"skills"`
		Refused []workspace.RefusedSkill `json:"refused"`
	}
	if err := json.Unmarshal([]byte(mustCall(t, cs, ToolSkills, map[string]any{})), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list.Skills {
		got = append(got, s.Name+"="+s.LoadedFor)
	}
	if want := []string{"core=every thread", "grids=mode analysis", "plans="}; !reflect.DeepEqual(got, want) {
		t.Errorf("skills %v, want %v", got, want)
	}
	if len(list.Refused) != 1 || list.Refused[0].File != "skills/broken.md" || !strings.Contains(list.Refused[0].Reason, "front matter: line 1") {
		t.Errorf("refused %+v", list.Refused)
	}

	if got := mustCall(t, cs, ToolSkills, map[string]any{"name": "grids"}); got != "---\ndescription: Reading ARC grids\ntags: [grids]\nmodes: [analysis]\n---\n# Grids\nRow by row.\n" {
		t.Errorf("read grids: %q", got)
	}
	for _, tc := range []struct{ name, want string }{
		{"nope", "no skills/nope.md"},
		{"broken", "front matter: line 1"},
		{"../etc/passwd", "skill name"},
	} {
		text, isErr := call(t, cs, ToolSkills, map[string]any{"name": tc.name})
		if !isErr || !strings.Contains(text, tc.want) || !strings.Contains(text, "\nhint: ") {
			t.Errorf("read %q: error=%v %q, want an error naming %q with a hint", tc.name, isErr, text, tc.want)
		}
	}
}
