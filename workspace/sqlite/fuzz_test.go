package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// FuzzMarkerRow inserts a marker row as an agent in any language does,
// with whatever name and body it likes, and commits it: the commit never
// fails on what an agent wrote, takes the row (the markers table is empty
// after it), journals it exactly once under the name it was inserted with
// (or the name the store gives a nameless row), and writes a state that
// validates and that the journal rebuilds exactly.
func FuzzMarkerRow(f *testing.F) {
	for _, seed := range []struct {
		done       bool
		name, body string
	}{
		{false, ".claim.w1.1", `{"agent_id":"w1","subtask_id":"s1","claimed_at":"2024-01-15T10:00:00Z"}`},
		{true, ".done.w1.2", `{"agent_id":"w1","subtask_id":"s1","status":"completed","output_file":"outputs/s1.json"}`},
		{true, ".done.w1.3", `{"agent_id":"w1","status":"completed","output_file":"plan.json"}`},
		{false, "", `{}`},
		{false, ".claim.'); DROP TABLE tasks; --", `{"agent_id":"'); DROP TABLE journal; --","subtask_id":"s1"}`},
		{true, ".done.a\x00b", "\x00\xff"},
		{false, ".claim.ключ/../x", `{"agent_id":"w1","subtask_id":"s1","claimed_at":"not a time"}`},
		{true, ".done." + strings.Repeat("x", 300), strings.Repeat("[", 200) + strings.Repeat("]", 200)},
		{false, "not a marker", `{"agent_id":"w1","subtask_id":"s1","extra":{"a":[1,2,{"b":null}]}}`},
		{true, ".done.w1.4", `{"agent_id":"w1","subtask_id":"s1","status":"failed","error":"` + strings.Repeat("e", 5000) + `"}`},
	} {
		f.Add(seed.done, seed.name, seed.body)
	}
	s, _ := newStore(f)
	ctx := context.Background()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, done bool, name, body string) {
		id := "f" + strconv.FormatInt(n.Add(1), 10)
		if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "fuzz"}); err != nil {
			t.Fatal(err)
		}
		kind := workspace.KindClaim
		if done {
			kind = workspace.KindDone
		}
		if _, err := s.DB().Exec("INSERT INTO markers (task_id, kind, name, body) VALUES ($1, $2, $3, $4)", id, kind, name, body); err != nil {
			t.Fatalf("insert a marker row: %v", err)
		}
		var inserted string
		if err := s.DB().QueryRow("SELECT name FROM markers WHERE task_id = $1", id).Scan(&inserted); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Committer(id).Commit(ctx, workspace.CommitRequest{}); err != nil {
			t.Fatalf("commit of marker %q %q: %v", inserted, body, err)
		}
		var waiting int
		if err := s.DB().QueryRow("SELECT count(*) FROM markers WHERE task_id = $1", id).Scan(&waiting); err != nil || waiting != 0 {
			t.Fatalf("%d markers waiting after the commit, %v", waiting, err)
		}
		recs, err := s.ReadJournal(ctx, id)
		if err != nil || len(recs) != 1 || recs[0].Seq != 1 || recs[0].File != inserted || recs[0].Kind != kind {
			t.Fatalf("journal %+v, %v; want one %s record of %q", recs, err, kind, inserted)
		}
		st, err := s.ReadState(ctx, id)
		if err != nil || st.JournalSeq != 1 {
			t.Fatalf("state after the commit: %+v, %v", st, err)
		}
		rebuilt, err := s.Rebuild(id)
		if err != nil || !reflect.DeepEqual(rebuilt, st) {
			t.Fatalf("rebuilt %+v, %v\nwritten %+v", rebuilt, err, st)
		}
	})
}

// FuzzEntry stores an entry with whatever key, description and value: the
// store refuses it with ErrInvalid and keeps nothing, or keeps it and
// gives the key, description and value back byte for byte.
func FuzzEntry(f *testing.F) {
	f.Add("k", "d", `{"a":1}`)
	f.Add("'); DROP TABLE entries; --", "'; DELETE FROM tasks; --", `"'); DROP TABLE tasks; --"`)
	f.Add("ключ 🔑", "a\x00b", `"a\u0000b"`)
	f.Add("a\x00b", "", "\x00")
	f.Add("..", "\xff", strings.Repeat("[", 65)+strings.Repeat("]", 65))
	f.Add(strings.Repeat("k", 201), "d", `{a:1}`)
	f.Add("%2F", "d", " 1 ")
	s, _ := newStore(f)
	if _, err := s.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t1", Description: "fuzz"}); err != nil {
		f.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, key, desc, value string) {
		before, _ := s.ListEntries(ctx, sc)
		r, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Description: desc, Value: json.RawMessage(value), Agent: "a"})
		if err != nil {
			if !errors.Is(err, workspace.ErrInvalid) || err.Error() == "" {
				t.Fatalf("store %q = %q: %v, want ErrInvalid", key, value, err)
			}
			if after, _ := s.ListEntries(ctx, sc); !reflect.DeepEqual(after, before) {
				t.Fatalf("a refused store changed the entries")
			}
			return
		}
		e, err := s.GetEntry(ctx, sc, key)
		if err != nil || e.Key != key || e.ShortDescription != desc || string(e.Value) != value || e.Version != r.Entry.Version {
			t.Fatalf("stored %q %q %q, read back %q %q %q (v%d, want v%d), %v", key, desc, value, e.Key, e.ShortDescription, e.Value, e.Version, r.Entry.Version, err)
		}
		if err := s.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: key, Agent: "a"}); err != nil {
			t.Fatalf("delete %q: %v", key, err)
		}
	})
}
