package web

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestDiffPlans(t *testing.T) {
	t.Parallel()
	st := func(id, desc string, deps ...string) workspace.Subtask {
		return workspace.Subtask{ID: id, Description: desc, Dependencies: deps}
	}
	base := workspace.Plan{ID: "p", Version: 1, Status: "revision_needed", Summary: "s",
		Subtasks:    []workspace.Subtask{st("a", "A"), st("b", "B", "a")},
		Checkpoints: []workspace.Checkpoint{{ID: "c1", Subtasks: []string{"a"}}}}
	tests := []struct {
		name string
		edit func(p *workspace.Plan)
		want string // the diff as JSON, without from and to
	}{
		{"the same but its version and status", func(p *workspace.Plan) { p.Version, p.Status = 2, "approved" },
			`{"plan":[],"added":[],"removed":[],"changed":[],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"a subtask added", func(p *workspace.Plan) { p.Subtasks = append(p.Subtasks, st("c", "C", "b")) },
			`{"plan":[],"added":[{"id":"c","description":"C","dependencies":["b"]}],"removed":[],"changed":[],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"a subtask removed", func(p *workspace.Plan) { p.Subtasks = p.Subtasks[:1] },
			`{"plan":[],"added":[],"removed":[{"id":"b","description":"B","dependencies":["a"]}],"changed":[],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"fields changed, added and removed", func(p *workspace.Plan) {
			p.Subtasks = []workspace.Subtask{{ID: "a", Description: "A2", MaxRetries: 1}, st("b", "B")}
		}, `{"plan":[],"added":[],"removed":[],"changed":[{"id":"a","changes":[{"field":"description","from":"A","to":"A2"},{"field":"max_retries","to":1}]},{"id":"b","changes":[{"field":"dependencies","from":["a"]}]}],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"the order alone is no change", func(p *workspace.Plan) { p.Subtasks = []workspace.Subtask{p.Subtasks[1], p.Subtasks[0]} },
			`{"plan":[],"added":[],"removed":[],"changed":[],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"the plan's own fields", func(p *workspace.Plan) { p.Summary, p.Risks = "s2", []string{"late"} },
			`{"plan":[{"field":"risks","to":["late"]},{"field":"summary","from":"s","to":"s2"}],"added":[],"removed":[],"changed":[],"checkpoints_added":[],"checkpoints_removed":[],"checkpoints_changed":[]}`},
		{"checkpoints", func(p *workspace.Plan) {
			p.Checkpoints = []workspace.Checkpoint{{ID: "c1", Subtasks: []string{"a", "b"}}, {ID: "c2", Subtasks: []string{"b"}}}
		}, `{"plan":[],"added":[],"removed":[],"changed":[],"checkpoints_added":[{"id":"c2","subtasks":["b"]}],"checkpoints_removed":[],"checkpoints_changed":[{"id":"c1","changes":[{"field":"subtasks","from":["a"],"to":["a","b"]}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base
			b.Subtasks = append([]workspace.Subtask(nil), base.Subtasks...)
			tt.edit(&b)
			d, err := DiffPlans(&base, &b)
			if err != nil {
				t.Fatal(err)
			}
			if d.From != 1 || d.To != b.Version {
				t.Errorf("from %d to %d, want 1 to %d", d.From, d.To, b.Version)
			}
			d.From, d.To = 0, 0
			got, _ := json.Marshal(d)
			var g, w any
			_ = json.Unmarshal(got, &g)
			if err := json.Unmarshal([]byte(`{"from":0,"to":0,`+tt.want[1:]), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if d.Same() != (tt.want == tests[0].want) {
				t.Errorf("Same() = %v", d.Same())
			}
		})
	}
}

func TestDiffDocs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", `{"summary":"x","code":{"a.go":"1"}}`, `{"code":{"a.go":"1"},"summary":"x"}`, `[]`},
		{"a leaf changed deep down", `{"code":{"a.go":"1","b.go":"2"}}`, `{"code":{"a.go":"1","b.go":"3"}}`, `[{"field":"code.b.go","from":"2","to":"3"}]`},
		{"added and removed", `{"summary":"x","error":"e"}`, `{"summary":"x","files_created":["f"]}`, `[{"field":"error","from":"e"},{"field":"files_created","to":["f"]}]`},
		{"an object became a list", `{"v":{"a":1}}`, `{"v":[1]}`, `[{"field":"v","from":{"a":1},"to":[1]}]`},
		{"not objects", `[1]`, `[2]`, `[{"field":"","from":[1],"to":[2]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, err := DiffDocs([]byte(tt.a), []byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(cs)
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(tt.want), &w)
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if _, err := DiffDocs([]byte(`{`), []byte(`{}`)); err == nil {
		t.Error("a broken document compared without error")
	}
}
