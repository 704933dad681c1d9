package workspace

import (
	"errors"
	"slices"
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestPlanAmendmentApply(t *testing.T) {
	cur := Plan{ID: "p", TaskID: "t", Version: 2, CreatedBy: "planner",
		Subtasks: []Subtask{
			{ID: "a", Description: "a"},
			{ID: "b", Description: "b", Dependencies: []string{"a"}},
			{ID: "c", Description: "c"},
		},
		Checkpoints: []Checkpoint{{ID: "cp", Subtasks: []string{"b", "c"}}},
	}
	next, err := PlanAmendment{
		Add:      []Subtask{{ID: "d", Description: "d", Dependencies: []string{"a"}}},
		Change:   []Subtask{{ID: "b", Description: "b2"}},
		Withdraw: []string{"c"},
	}.Apply(cur)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range next.Subtasks {
		ids = append(ids, s.ID+":"+s.Description)
	}
	if !slices.Equal(ids, []string{"a:a", "b:b2", "d:d"}) || next.ID != "p" || next.Version != 0 || next.CreatedBy != "" ||
		!slices.Equal(next.Checkpoints[0].Subtasks, []string{"b"}) || !slices.Equal(cur.Checkpoints[0].Subtasks, []string{"b", "c"}) {
		t.Fatalf("amended plan %+v (cur %+v)", next, cur)
	}
	for _, c := range []struct {
		a    PlanAmendment
		want string
	}{
		{PlanAmendment{}, "the amendment is empty"},
		{PlanAmendment{Add: []Subtask{{ID: "a", Description: "x"}}}, "has a subtask a already"},
		{PlanAmendment{Change: []Subtask{{ID: "z", Description: "x"}}}, "has no subtask z to change"},
		{PlanAmendment{Withdraw: []string{"z"}}, "has no subtask z to withdraw"},
		{PlanAmendment{Withdraw: []string{"a"}}, "subtask b depends on a, which the amendment withdraws"},
		{PlanAmendment{Withdraw: []string{"c", "c"}}, "subtask c is named twice"},
		{PlanAmendment{Add: []Subtask{{ID: "c", Description: "x"}}, Withdraw: []string{"c"}}, "subtask c is named twice"},
		{PlanAmendment{Add: []Subtask{{ID: "../x", Description: "x"}}}, "subtask id"},
		{PlanAmendment{Add: []Subtask{{ID: "x", Description: "x", Dependencies: []string{"a b"}}}}, "dependency of subtask x"},
	} {
		_, err := c.a.Apply(cur)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an invalid-input error saying %q", c.a, err, c.want)
		}
	}
}
