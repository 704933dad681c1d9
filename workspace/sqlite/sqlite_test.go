package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

func TestInitMigratesOnceAndOpenChecksVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := "sqlite:" + filepath.Join(t.TempDir(), "ws.db")
	if _, err := Open(ctx, root); !errors.Is(err, ErrNotInitialized) || workspace.HintOf(err) == "" {
		t.Fatalf("Open before init: %v, want ErrNotInitialized with a hint", err)
	}
	s, n, err := Init(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if n != SchemaVersion() || n < 1 {
		t.Fatalf("first init applied %d migrations, want %d", n, SchemaVersion())
	}
	s.Close()
	s, n, err = Init(ctx, root)
	if err != nil || n != 0 {
		t.Fatalf("second init: %d migrations, %v; want 0, nil", n, err)
	}
	if _, err := s.DB().Exec("INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, root); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer database: %v, want ErrSchemaTooNew", err)
	}
	if _, _, err := Init(ctx, root); !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Init of a newer database: %v, want ErrSchemaTooNew", err)
	}
}

func TestParsePath(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs("agents.db")
	for _, c := range []struct {
		root, want string
	}{
		{"sqlite:./agents.db", abs},
		{"sqlite:agents.db", abs},
		{"sqlite:///var/lib/agents.db", "/var/lib/agents.db"},
		{"sqlite:/var/lib/agents.db", "/var/lib/agents.db"},
		{"sqlite:", ""},
		{"sqlite://host/x.db", ""},
		{"sqlite:./a.db?mode=ro", ""},
	} {
		got, err := ParsePath(c.root)
		if c.want == "" {
			if !errors.Is(err, workspace.ErrInvalid) {
				t.Errorf("ParsePath(%q) = %q, %v; want ErrInvalid", c.root, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParsePath(%q) = %q, %v; want %q", c.root, got, err, c.want)
		}
	}
}

// TestReusedMarkerNameRefused: a name the journal holds is refused at
// insert by the trigger, as ErrConflict.
func TestReusedMarkerNameRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t1', 1, '', '.claim.a.x', '{}', 0)`); err != nil {
		t.Fatal(err)
	}
	_, err := s.DB().Exec(`INSERT INTO markers (task_id, kind, name, body) VALUES ('t1', 'claim', '.claim.a.x', '{}')`)
	if !isRaised(err) {
		t.Fatalf("insert of a journaled name: %v, want the trigger's refusal", err)
	}
	if _, err := s.DB().Exec(`INSERT INTO markers (task_id, kind, body) VALUES ('t1', 'claim', '{}')`); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := s.DB().QueryRow("SELECT name FROM markers").Scan(&name); err != nil || name != ".claim.1" {
		t.Fatalf("a marker inserted without a name is named %q (%v), want .claim.1", name, err)
	}
}

// TestStandbyTakesOver: a second Lead fails with ErrLocked; with Standby
// it waits, and takes the lead once the first releases it.
func TestStandbyTakesOver(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	l, err := s.Lead(ctx, workspace.LeadOptions{Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lead(ctx, workspace.LeadOptions{Holder: "second"}); !errors.Is(err, workspace.ErrLocked) {
		t.Fatalf("second Lead: %v, want ErrLocked", err)
	}
	if serving, err := s.Serving(); err != nil || !serving {
		t.Fatalf("Serving = %v, %v while led", serving, err)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := s.Lead(ctx, workspace.LeadOptions{Holder: "standby", Standby: true})
		if err == nil {
			err = l2.Release(ctx)
		}
		got <- err
	}()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("standby: %v", err)
	}
}
