package api

import (
	"encoding/json"
	"slices"
	"strconv"
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

// TestSessionReadWhole: one request reads the latest items of a thread's
// session with their values, in key order (prefix, last, values), on
// every store; entries without the prefix are left out, and a bad last
// or values is refused.
func TestSessionReadWhole(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "a session"}); err != nil {
				t.Fatal(err)
			}
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
			base := "/api/v1/tasks/t1/threads/t1/session"
			for i := range 5 {
				c.want(c.do("PUT", base+"/item.00"+strconv.Itoa(i), map[string]any{"value": map[string]any{"n": i}}), 200, "put an item")
			}
			c.want(c.do("PUT", base+"/zeta", map[string]any{"value": "not an item"}), 200, "put another entry")
			var list struct {
				Entries []struct {
					Key     string          `json:"key"`
					Version int             `json:"version"`
					Value   json.RawMessage `json:"value"`
				} `json:"entries"`
			}
			c.want(c.do("GET", base+"?prefix=item.&last=3&values=true", nil), 200, "the last three items").json(t, &list)
			var got []string
			for _, e := range list.Entries {
				got = append(got, e.Key+"="+string(e.Value))
			}
			if want := []string{`item.002={"n":2}`, `item.003={"n":3}`, `item.004={"n":4}`}; !slices.Equal(got, want) {
				t.Fatalf("entries %v, want %v", got, want)
			}
			list.Entries = nil
			c.want(c.do("GET", base, nil), 200, "the manifest").json(t, &list)
			if len(list.Entries) != 6 || list.Entries[0].Value != nil {
				t.Fatalf("a listing without values: %+v", list.Entries)
			}
			c.want(c.do("GET", base+"?last=0", nil), 400, "last=0").problem(t)
			c.want(c.do("GET", base+"?values=maybe", nil), 400, "values=maybe").problem(t)
		})
	}
}
