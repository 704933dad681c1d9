package sqlstore

import (
	"errors"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// rows is a task's products as a map, read and written the way a store's
// transaction reads and writes its rows.
type rows map[string]string

func (r rows) get(rel string) (string, bool, error) { b, ok := r[rel]; return b, ok, nil }
func (r rows) put(rel string, data []byte) error    { r[rel] = string(data); return nil }
func (r rows) kept(prefix string) ([]string, error) {
	var out []string
	for p := range r {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix {
			out = append(out, p)
		}
	}
	return out, nil
}

func TestReplaceKeepsHistory(t *testing.T) {
	r := rows{"outputs/s1.json": "a", "outputs/history/s1.v1.json": "old"}
	if err := Replace("outputs", "s1", []byte("b"), r.get, r.kept, r.put); err != nil {
		t.Fatal(err)
	}
	if r["outputs/s1.json"] != "b" || r[workspace.HistoryName("outputs", "s1", 2)] != "a" {
		t.Errorf("rows after replace: %v", r)
	}
	n := len(r)
	if err := Replace("outputs", "s1", []byte("b"), r.get, r.kept, r.put); err != nil || len(r) != n {
		t.Errorf("the same bytes again: err %v, %d rows, want %d", err, len(r), n)
	}
}

func TestReadPlanMissing(t *testing.T) {
	r := rows{}
	if _, err := ReadPlan("t1", 0, r.get); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("no plan: err %v, want ErrNotFound", err)
	}
	if _, err := ReadPlan("t1", 2, r.get); !errors.Is(err, workspace.ErrNotFound) {
		t.Errorf("no kept plan: err %v, want ErrNotFound", err)
	}
}

func TestTaskFileName(t *testing.T) {
	for name, ok := range map[string]bool{"": false, "/etc/passwd": false, `\x`: false, "../t2/plan.json": false, "a/../plan.json": true, "outputs/s1.json": true} {
		if _, err := TaskFileName(name); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok %v", name, err, ok)
		}
	}
	if id, ok := ThreadFile("threads/th1.json"); !ok || id != "th1" {
		t.Errorf("ThreadFile: %q %v", id, ok)
	}
}
