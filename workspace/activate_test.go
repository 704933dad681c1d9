package workspace

import (
	"testing"
	"time"
)

func TestPickActive(t *testing.T) {
	at := func(task, id, status string, created, activated int) agentThread {
		th := Thread{ID: id, Status: status, CreatedAt: fixtureNow.Add(time.Duration(created) * time.Second)}
		if activated > 0 {
			th.ActivatedAt = fixtureNow.Add(time.Duration(activated) * time.Second)
		}
		return agentThread{task: task, t: th}
	}
	tests := []struct {
		name    string
		threads []agentThread
		want    string // task/id, or "" for none
	}{
		{"none", nil, ""},
		{"only pending and done", []agentThread{at("a", "x", "pending", 0, 5), at("a", "y", "done", 0, 9)}, ""},
		{"activated last wins", []agentThread{at("a", "x", "active", 9, 1), at("b", "y", "active", 0, 2)}, "b/y"},
		{"activated beats newer", []agentThread{at("a", "x", "active", 9, 0), at("b", "y", "active", 0, 1)}, "b/y"},
		{"newest when none activated", []agentThread{at("a", "x", "active", 1, 0), at("b", "y", "active", 2, 0)}, "b/y"},
		{"tie: task id, then thread id", []agentThread{at("b", "a", "active", 0, 0), at("a", "z", "active", 0, 0), at("a", "y", "active", 0, 0)}, "a/y"},
		{"a pending thread activated later does not count", []agentThread{at("a", "x", "active", 0, 1), at("b", "y", "pending", 0, 9)}, "a/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pickActive(tc.threads)
			name := ""
			if ok {
				name = got.task + "/" + got.t.ID
			}
			if name != tc.want {
				t.Errorf("got %q, want %q", name, tc.want)
			}
		})
	}
}
