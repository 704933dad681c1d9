package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// TestVerdictReadsItsOwnRow: in a task of 300 subtasks, the verdicts on a
// claim won and one lost, taken in one commit, are read from their
// journal rows: with the state's document made unreadable and the
// excerpts' stamp set to the row's new version, they are still what the
// machine says on the whole state. A state row whose stamp is not the
// excerpt's is read whole (and found unreadable). A store on a schema
// without the verdict column answers from the document.
func TestVerdictReadsItsOwnRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root := newStore(t)
	epoch := lead(t, s, "test-daemon")
	plannedTask(t, s, "t1", 300, epoch)
	var names []string
	for _, agent := range []string{"w1", "w2"} {
		names = append(names, path.Base(drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: agent, SubtaskID: "s150"})))
	}
	commitAll(t, s, "t1", epoch)
	whole, err := s.ReadState(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]workspace.Verdict{}
	for _, name := range names {
		var body string
		if err := s.pool.QueryRow(ctx, "SELECT record FROM journal WHERE task_id = 't1' AND name = $1", name).Scan(&body); err != nil {
			t.Fatal(err)
		}
		var rec workspace.JournalRecord
		if err := json.Unmarshal([]byte(body), &rec); err != nil {
			t.Fatal(err)
		}
		want[name] = machine.Judge(whole, rec, name)
	}
	if want[names[0]].Verdict != workspace.VerdictWon || want[names[1]].Verdict != workspace.VerdictLost {
		t.Fatalf("the machine's verdicts: %+v", want)
	}
	check := func(s *Store, what string) {
		t.Helper()
		for _, name := range names {
			v, where, err := s.ReadVerdict("t1", name, 0)
			if err != nil || where != workspace.MarkerDecided || !reflect.DeepEqual(v, want[name]) {
				t.Errorf("%s, %s: %+v, %s, %v; want %+v", name, what, v, where, err, want[name])
			}
		}
	}
	check(s, "as committed")

	exec := func(q string) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var doc string
	if err := s.pool.QueryRow(ctx, "SELECT doc FROM states WHERE task_id = 't1'").Scan(&doc); err != nil {
		t.Fatal(err)
	}
	exec("UPDATE states SET doc = '{not json' WHERE task_id = 't1'") // raises its version
	if _, _, err := s.ReadVerdict("t1", names[0], 0); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("the state row moved on, its document unreadable: %v, want ErrInvalid", err)
	}
	exec(`UPDATE journal SET verdict = jsonb_set(verdict::jsonb, '{version}', to_jsonb((SELECT version FROM states WHERE task_id = 't1')))::text
		WHERE task_id = 't1' AND verdict IS NOT NULL`)
	check(s, "the document unreadable, the excerpts' stamp the row's")

	if _, err := s.pool.Exec(ctx, "UPDATE states SET doc = $1 WHERE task_id = 't1'", doc); err != nil {
		t.Fatal(err)
	}
	exec("ALTER TABLE journal DROP COLUMN verdict")
	old, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	check(old, "no verdict column")
}
