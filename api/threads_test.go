package api

import (
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestThreads: a thread started from the caller's agent, read, listed
// and updated field by field, on every store; a thread of no task and an
// update with an unknown field are refused.
func TestThreads(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "threads"}); err != nil {
				t.Fatal(err)
			}
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "coordinator")
			var th workspace.Thread
			a := c.want(c.do("POST", "/api/v1/tasks/t1/threads", map[string]any{"id": "th_solver", "to": "solver", "message": "solve it", "buffers": []string{"env:k"}}), 201, "new thread")
			a.json(t, &th)
			if th.ID != "th_solver" || th.From != "coordinator" || th.ParentID != "t1" || th.Status != "active" || a.header.Get("Location") != "/api/v1/tasks/t1/threads/th_solver" {
				t.Fatalf("thread %+v", th)
			}
			c.want(c.do("POST", "/api/v1/tasks/t1/threads", map[string]any{"id": "th_solver", "to": "solver"}), 409, "the same id again").problem(t)
			progress := "half done"
			c.want(c.do("PATCH", "/api/v1/tasks/t1/threads/th_solver", map[string]any{"progress": progress, "status": "pending"}), 200, "update").json(t, &th)
			if th.Progress != progress || th.Status != "pending" || th.Message != "solve it" || len(th.Buffers) != 1 {
				t.Fatalf("updated %+v", th)
			}
			c.want(c.do("GET", "/api/v1/tasks/t1/threads/th_solver", nil), 200, "get").json(t, &th)
			if th.Progress != progress {
				t.Fatalf("read back %+v", th)
			}
			var list struct {
				Threads []workspace.Thread `json:"threads"`
			}
			c.want(c.do("GET", "/api/v1/tasks/t1/threads", nil), 200, "list").json(t, &list)
			if len(list.Threads) != 2 || list.Threads[0].ID != "t1" || list.Threads[1].ID != "th_solver" {
				t.Fatalf("threads %+v", list.Threads)
			}
			c.want(c.do("GET", "/api/v1/tasks/t1/threads/th_none", nil), 404, "no such thread").problem(t)
			c.want(c.do("PATCH", "/api/v1/tasks/t1/threads/th_solver", map[string]any{"owner": "x"}), 400, "an unknown field").problem(t)
			c.want(c.do("POST", "/api/v1/tasks/t1/threads", map[string]any{"to": "a b"}), 400, "a bad agent").problem(t)
		})
	}
}
