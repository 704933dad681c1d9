package tables

import (
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestMigrations: the files come back in version order; a file not named
// NNNN_name.sql, or a gap in the versions, is refused by name.
func TestMigrations(t *testing.T) {
	ms, err := Migrations(fstest.MapFS{
		"migrations/0002_guard.sql": {Data: []byte("B")},
		"migrations/0001_init.sql":  {Data: []byte("A")},
		"migrations/README":         {Data: []byte("not a migration")},
	})
	if err != nil || len(ms) != 2 || ms[0] != (Migration{1, "init", "A"}) || ms[1] != (Migration{2, "guard", "B"}) {
		t.Fatalf("Migrations: %+v, %v", ms, err)
	}
	for files, want := range map[string]string{
		"migrations/1_init.sql":    "is not named NNNN_name.sql",
		"migrations/0001init.sql":  "is not named NNNN_name.sql",
		"migrations/0002_next.sql": "versions must run 1, 2, 3… without gaps",
	} {
		if _, err := Migrations(fstest.MapFS{files: {Data: []byte("x")}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", files, err, want)
		}
	}
}
