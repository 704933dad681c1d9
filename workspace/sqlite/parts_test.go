package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore/sqlstoretest"
)

// newParts is a fresh store as the state parts' tests reach it
// (sqlstoretest.Parts), with SQLite's check of the parts kept.
func newParts(t *testing.T) (*Store, sqlstoretest.Parts) {
	t.Helper()
	s, _ := newStore(t)
	db := sqlDriver{s}.Reads()
	return s, sqlstoretest.Parts{
		Store:     s,
		DB:        db,
		PartsFrom: dialect.StatePartsFrom,
		// No part is held by no row, and none not held by the newest
		// row is unmarked as replaced.
		Settled: func(ctx context.Context, task string) error {
			var orphans, unmarked int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM state_parts p
		WHERE NOT EXISTS (SELECT 1 FROM state_history h, json_each(h.parts) j WHERE h.parts IS NOT NULL AND j.value = p.id)`).Scan(&orphans); err != nil {
				return err
			}
			if err := db.QueryRow(ctx, `SELECT count(*) FROM state_parts WHERE replaced_at IS NULL AND id NOT IN
		(SELECT j.value FROM state_history h, json_each(h.parts) j WHERE h.n = (SELECT max(n) FROM state_history WHERE task_id = $1))`, task).Scan(&unmarked); err != nil {
				return err
			}
			if orphans != 0 || unmarked != 0 {
				return fmt.Errorf("%d parts held by no row, %d not held by the state and not marked replaced", orphans, unmarked)
			}
			return nil
		},
		StateWhole: "SELECT parts IS NULL FROM state_history WHERE task_id = $1 ORDER BY n DESC LIMIT 1",
	}
}

// TestStateParts runs the state parts' tests every driver runs
// (sqlstoretest), each on a fresh store of SQLite's.
func TestStateParts(t *testing.T) {
	sqlstoretest.RunParts(t, func(t *testing.T) sqlstoretest.Parts {
		_, p := newParts(t)
		return p
	})
}

// An agent reads the states and backups views with its own SQLite, such
// as Debian's python3 (SQLite 3.40): the documents assembled from parts
// must read there as they were written.
func TestStatePartsReadByPython(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		optdep.Skip(t, "python3", "python3 is not on PATH: the views cannot be read with its sqlite3")
	}
	s, p := newParts(t)
	task := sqlstoretest.NewTask(t, p, 600)
	task.ClaimAndCommitN(workspace.DefaultBackupsKeep + 2)
	const script = `import json, sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
rows = db.execute("SELECT journal_seq, doc FROM backups WHERE task_id = 't1' ORDER BY n").fetchall()
rows += db.execute("SELECT journal_seq, doc FROM states WHERE task_id = 't1'").fetchall()
json.dump({"version": sqlite3.sqlite_version, "rows": rows}, sys.stdout)
`
	out, err := exec.Command(py, "-c", script, s.Path()).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var got struct {
		Version string
		Rows    [][2]json.RawMessage
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != workspace.DefaultBackupsKeep+1 {
		t.Fatalf("python3's sqlite3 %s read %d rows, want the state and %d backups", got.Version, len(got.Rows), workspace.DefaultBackupsKeep)
	}
	for _, r := range got.Rows {
		var (
			seq int64
			doc string
		)
		if err := json.Unmarshal(r[0], &seq); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(r[1], &doc); err != nil {
			t.Fatal(err)
		}
		if want, ok := task.Wrote[seq]; !ok || doc != want {
			t.Fatalf("python3's sqlite3 %s reads %d bytes at journal_seq %d, other than the %d written", got.Version, len(doc), seq, len(want))
		}
	}
}
