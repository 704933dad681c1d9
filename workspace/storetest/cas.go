package storetest

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// testCreateOnly: a store with IfAbsent creates a key that is not there
// and refuses one that is (ErrConflict, nothing changed); of many racing
// creators exactly one wins. In every scope.
func testCreateOnly(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	for _, sc := range scopes() {
		t.Run(string(sc.Kind), func(t *testing.T) {
			r, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "once", Value: json.RawMessage(`1`), Agent: "worker_1", IfAbsent: true})
			ok(t, err, "create a new key")
			if r.Entry.Version != 1 {
				t.Fatalf("created at version %d, want 1", r.Entry.Version)
			}
			_, err = s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "once", Value: json.RawMessage(`2`), Agent: "worker_2", IfAbsent: true})
			is(t, err, workspace.ErrConflict, "create a key that exists")
			if e, _ := s.GetEntry(bg, sc, "once"); e.Version != 1 || string(e.Value) != "1" || e.StoredBy != "worker_1" {
				t.Fatalf("a refused create changed the entry: %+v", e)
			}
			const racers = 8
			var wg sync.WaitGroup
			var mu sync.Mutex
			won, lost := 0, 0
			for i := range racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "race", Value: json.RawMessage(strconv.Itoa(i)), Agent: "agent_" + strconv.Itoa(i), IfAbsent: true})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						won++
					case errors.Is(err, workspace.ErrConflict):
						lost++
					default:
						t.Errorf("racing create: %v", err)
					}
				}()
			}
			wg.Wait()
			if won != 1 || lost != racers-1 {
				t.Fatalf("%d racing creates: %d won, %d refused; want exactly one to win", racers, won, lost)
			}
		})
	}
}

// testDeleteIfVersion: a delete with IfVersion removes the entry only at
// that version; a stale one is ErrConflict and changes nothing, a missing
// key ErrNotFound.
func testDeleteIfVersion(t *testing.T, s workspace.Store, _ Hooks) {
	withThread(t, s)
	for _, sc := range scopes() {
		t.Run(string(sc.Kind), func(t *testing.T) {
			for v := range 2 {
				_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(strconv.Itoa(v)), Agent: "worker_1"})
				ok(t, err, "store")
			}
			is(t, s.DeleteEntry(bg, sc, workspace.DeleteRequest{Key: "k", Agent: "worker_1", IfVersion: 1}), workspace.ErrConflict, "delete at a stale version")
			if e, err := s.GetEntry(bg, sc, "k"); err != nil || e.Version != 2 {
				t.Fatalf("a refused delete changed the entry: %v %+v", err, e)
			}
			ok(t, s.DeleteEntry(bg, sc, workspace.DeleteRequest{Key: "k", Agent: "worker_1", IfVersion: 2}), "delete at the current version")
			_, err := s.GetEntry(bg, sc, "k")
			is(t, err, workspace.ErrNotFound, "get a deleted key")
			is(t, s.DeleteEntry(bg, sc, workspace.DeleteRequest{Key: "k", Agent: "worker_1", IfVersion: 2}), workspace.ErrNotFound, "delete a missing key at a version")
		})
	}
}
