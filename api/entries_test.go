package api

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestEntries: every entry route of every scope on every store, with
// compare-and-set: If-None-Match: * creates only, If-Match: "N" writes
// and deletes only at version N, and a failed precondition is a 412
// whose problem carries the version stored now.
func TestEntries(t *testing.T) {
	bases := []string{
		"/api/v1/tasks/t1/env",
		"/api/v1/tasks/t1/threads/th1/session",
		"/api/v1/memory/global",
		"/api/v1/memory/agents/worker_1",
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "entries"}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.NewThread(t.Context(), workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "coordinator", To: "worker_1"}); err != nil {
				t.Fatal(err)
			}
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
			for _, base := range bases {
				t.Run(strings.TrimPrefix(base, "/api/v1/"), func(t *testing.T) {
					c.t = t
					key := base + "/" + "notes%2Fday%201" // a key with a slash and a space
					a := c.want(c.do("PUT", key, map[string]any{"value": map[string]any{"n": 1}, "short_description": "notes"}, "If-None-Match", "*"), 200, "create")
					if a.header.Get("ETag") != `"1"` {
						t.Fatalf("ETag %q after create, want \"1\"", a.header.Get("ETag"))
					}
					p := c.want(c.do("PUT", key, map[string]any{"value": 2}, "If-None-Match", "*"), 412, "create again").problem(t)
					if p.CurrentVersion == nil || *p.CurrentVersion != 1 || p.Kind != kindVersionConflict {
						t.Fatalf("412 of a create-only: %+v", p)
					}
					a = c.want(c.do("PUT", key, map[string]any{"value": 2}, "If-Match", `"1"`), 200, "replace at version 1")
					if a.header.Get("ETag") != `"2"` {
						t.Fatalf("ETag %q after replace", a.header.Get("ETag"))
					}
					p = c.want(c.do("PUT", key, map[string]any{"value": 3}, "If-Match", `"1"`), 412, "replace at a stale version").problem(t)
					if p.CurrentVersion == nil || *p.CurrentVersion != 2 {
						t.Fatalf("412 of a stale If-Match: %+v", p)
					}
					var e workspace.Entry
					a = c.want(c.do("GET", key, nil), 200, "get")
					a.json(t, &e)
					if e.Key != "notes/day 1" || string(e.Value) != "2" || e.Version != 2 || e.StoredBy != "worker_1" || a.header.Get("ETag") != `"2"` {
						t.Fatalf("entry %+v, ETag %q", e, a.header.Get("ETag"))
					}
					c.want(c.do("PUT", key, map[string]any{"value": 4}), 200, "store without a condition")
					var list struct {
						Entries []workspace.ManifestItem `json:"entries"`
					}
					c.want(c.do("GET", base, nil), 200, "list").json(t, &list)
					if len(list.Entries) != 1 || list.Entries[0].Key != "notes/day 1" || list.Entries[0].Version != 3 {
						t.Fatalf("list %+v", list)
					}
					p = c.want(c.do("DELETE", key, nil, "If-Match", `"2"`), 412, "delete at a stale version").problem(t)
					if *p.CurrentVersion != 3 {
						t.Fatalf("412 of a stale delete: %+v", p)
					}
					c.want(c.do("DELETE", key, nil, "If-Match", `"3"`), 204, "delete at the current version")
					c.want(c.do("GET", key, nil), 404, "get a deleted key").problem(t)
					c.want(c.do("DELETE", key, nil), 404, "delete a deleted key").problem(t)
					p = c.want(c.do("PUT", key, map[string]any{"value": 1}, "If-Match", `"1"`), 412, "replace a missing key at a version").problem(t)
					if *p.CurrentVersion != 0 {
						t.Fatalf("412 of a missing key: %+v", p)
					}
				})
			}
		})
	}
}

// TestEntryHistory: an overwrite of the global memory by another agent
// leaves the earlier author and value readable through the API, on every
// store; an agent's memory keeps its own; env data has none.
func TestEntryHistory(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			srv := server(t, st, &httpauth.Gate{TrustLoopback: true})
			a, b := as(t, srv, "agent_a"), as(t, srv, "agent_b")
			a.want(a.do("PUT", "/api/v1/memory/global/plan", map[string]any{"value": "a's plan"}), 200, "a stores")
			b.want(b.do("PUT", "/api/v1/memory/global/plan", map[string]any{"value": "b's plan"}), 200, "b overwrites")
			var h struct {
				Versions []workspace.Entry `json:"versions"`
			}
			b.want(b.do("GET", "/api/v1/memory/global/plan/history", nil), 200, "history").json(t, &h)
			if len(h.Versions) != 1 || h.Versions[0].StoredBy != "agent_a" || string(h.Versions[0].Value) != `"a's plan"` || h.Versions[0].Version != 1 {
				t.Fatalf("history %+v", h.Versions)
			}
			a.want(a.do("PUT", "/api/v1/memory/agents/agent_a/note", map[string]any{"value": 1}), 200, "a's note")
			a.want(a.do("PUT", "/api/v1/memory/agents/agent_a/note", map[string]any{"value": 2}), 200, "a's note again")
			h.Versions = nil
			a.want(a.do("GET", "/api/v1/memory/agents/agent_a/note/history", nil), 200, "a's history").json(t, &h)
			if len(h.Versions) != 1 || string(h.Versions[0].Value) != "1" {
				t.Fatalf("a's history %+v", h.Versions)
			}
			h.Versions = nil
			a.want(a.do("GET", "/api/v1/memory/global/never/history", nil), 200, "no history").json(t, &h)
			if h.Versions == nil || len(h.Versions) != 0 {
				t.Fatalf("the history of a key never written: %+v", h.Versions)
			}
		})
	}
}
