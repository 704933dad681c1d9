package sqlite_test

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestValidate: validate on a sqlite: root checks the workspace as the
// tree export would write, and names a broken document by its place in
// that tree (never by the temporary directory it checked).
func TestValidate(t *testing.T) {
	t.Parallel()
	w, db := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve()
	runFlow(t, w, "t1")
	w.Ok("env", "store", "--task", "t1", "--key", "'); DROP TABLE entries; --", "--description", "d", "--value", `{"a":1}`)
	out := w.Ok("validate")
	if !strings.HasPrefix(out, "ok ") {
		t.Fatalf("validate: %s", out)
	}
	s := openDB(t, "sqlite:"+db)
	var body string
	if err := s.DB().QueryRow(`SELECT body FROM products WHERE task_id = 't1' AND path = 'outputs/s1.json'`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`UPDATE products SET body = '{"summary": 7}' WHERE task_id = 't1' AND path = 'outputs/s1.json'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`UPDATE states SET doc = json_set(doc, '$.status', 'nonsense') WHERE task_id = 't1'`); err != nil {
		t.Fatal(err)
	}
	r := w.Run("validate")
	for _, want := range []string{"tasks/t1/outputs/s1.json: ", "tasks/t1/state.json: "} {
		if r.Code != 1 || !strings.Contains(r.Stdout, want) || strings.Contains(r.Stdout+r.Stderr, "workspaced-validate-") {
			t.Errorf("validate of a broken output and state: want exit 1 naming %s: %v", want, r)
		}
	}
	if !strings.Contains(r.Stderr, "2 of ") {
		t.Errorf("validate should count 2 invalid files: %v", r)
	}
	if _, err := s.DB().Exec(`UPDATE products SET body = $1 WHERE task_id = 't1' AND path = 'outputs/s1.json'`, body); err != nil {
		t.Fatal(err)
	}
	var report struct {
		Files    int `json:"files"`
		Invalid  int `json:"invalid"`
		Problems []struct {
			Path string `json:"path"`
		} `json:"problems"`
	}
	r = w.Run("validate", "--json")
	clitest.Decode(t, r.Stdout, &report)
	if r.Code != 1 || report.Invalid != 1 || len(report.Problems) == 0 || report.Problems[0].Path != "tasks/t1/state.json" || report.Files < 5 {
		t.Errorf("validate --json: %+v (%v)", report, r)
	}
}
