package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// TestFrictionNoLostUpdate: eight writers add at once, each a merge into
// one shared pattern and an entry of its own per round; every add is a
// read-modify-write of the one friction row, so a lost update shows as a
// missing entry or a short count. Ten rounds a writer keep all eight
// contending from the first add to the last, which is all losing an
// update needs; more rounds only grow the document each add rewrites.
func TestFrictionNoLostUpdate(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := friction.Open(s, "writer_"+strconv.Itoa(w))
			for i := range each {
				// One shared pattern (a merge) and one of the writer's own
				// per round (a new entry): both are read-modify-writes.
				if _, _, err := log.Add(ctx, friction.Entry{Type: friction.TypeTimeout, Description: "slow", Pattern: "shared"}); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := log.Add(ctx, friction.Entry{Type: friction.TypeEscalation, Description: "w" + strconv.Itoa(w) + " r" + strconv.Itoa(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	list, err := friction.Open(s, "reader").List(ctx, friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+writers*each {
		t.Fatalf("%d entries, want %d: a concurrent add was lost", len(list), 1+writers*each)
	}
	ids := map[string]bool{}
	for _, e := range list {
		ids[e.ID] = true
		if e.Pattern == "shared" && e.Occurrences != writers*each {
			t.Fatalf("the shared entry counts %d occurrences, want %d", e.Occurrences, writers*each)
		}
	}
	if len(ids) != len(list) {
		t.Fatalf("ids repeat: %d ids for %d entries", len(ids), len(list))
	}
	// The row is the file's bytes: what friction.json holds on files.
	var body string
	if err := s.pool.QueryRow(ctx, "SELECT body FROM files WHERE path = 'friction/friction.json'").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(body, "{\n") || !strings.Contains(body, `"tally"`) {
		t.Fatalf("friction row does not hold friction.json: %.80q", body)
	}
}

func TestFrictionLockTimeoutNamesHolder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	holding, release := make(chan struct{}), make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	// Registered after the store's: on a failure the holder lets go first,
	// so the store's cleanup is not left waiting for its connection.
	t.Cleanup(let)
	done := make(chan error, 1)
	go func() {
		_, err := friction.Open(s, "slow_writer").Record(ctx, nil) // nothing to do: no lock
		if err != nil {
			done <- err
			return
		}
		done <- driver{s}.UpdateFriction(ctx, "slow_writer", time.Minute, func(old []byte) ([]byte, error) {
			close(holding)
			<-release
			return nil, nil
		})
	}()
	<-holding
	quick := friction.Open(s, "quick")
	// The holder keeps the lock until released, so any timeout runs out;
	// a short one that a busy machine cannot meet for the holder's lookup
	// would test the machine, not the store.
	quick.Timeout = 500 * time.Millisecond
	_, _, err := quick.Add(ctx, friction.Entry{Type: friction.TypeTimeout, Description: "d"})
	var te *locking.TimeoutError
	if !errors.Is(err, locking.ErrLocked) || !errors.As(err, &te) || te.Holder == nil || te.Holder.Agent != "slow_writer" {
		t.Fatalf("a writer waiting past the timeout: %v (holder %+v), want ErrLocked naming slow_writer", err, te)
	}
	let()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A change that writes nothing left no row; the next one writes.
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM files WHERE path = 'friction/friction.json'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d friction rows after changes that wrote nothing (%v)", n, err)
	}
	if _, _, err := quick.Add(ctx, friction.Entry{Type: friction.TypeTimeout, Description: "d"}); err != nil {
		t.Fatalf("add once the lock is free: %v", err)
	}
}

func TestNoteFrictionAndCorruptLog(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "friction"}); err != nil {
		t.Fatal(err)
	}
	e, isNew, err := friction.Open(s, "a").Add(ctx, friction.Entry{Type: friction.TypeWorkerFailure, Description: "crash", AffectedTasks: []string{"t1"}})
	if err != nil || !isNew {
		t.Fatal(err)
	}
	s.NoteFriction(ctx, friction.Recorded(e, isNew), []string{"t1", "t_none", "../x"})
	evs, _, err := s.ReadEvents(ctx, "t1")
	if err != nil || len(evs) != 1 || evs[0].Name != "friction_recorded" || evs[0].Args[0] != e.ID || evs[0].Attrs["new"] != "true" {
		t.Fatalf("events of t1: %+v, %v", evs, err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE task_id <> 't1'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("NoteFriction wrote %d events for tasks that do not exist (%v)", n, err)
	}
	// A log broken by hand is refused, and never overwritten.
	if _, err := s.pool.Exec(ctx, "UPDATE files SET body = '{\"entries\": 3}' WHERE path = 'friction/friction.json'"); err != nil {
		t.Fatal(err)
	}
	if _, err := friction.Open(s, "a").List(ctx, friction.Filter{}); !errors.Is(err, friction.ErrCorrupt) {
		t.Fatalf("list a broken log: %v, want ErrCorrupt", err)
	}
	if _, _, err := friction.Open(s, "a").Add(ctx, friction.Entry{Type: friction.TypeTimeout, Description: "d"}); !errors.Is(err, friction.ErrCorrupt) {
		t.Fatalf("add to a broken log: %v, want ErrCorrupt", err)
	}
	var body string
	if err := s.pool.QueryRow(ctx, "SELECT body FROM files WHERE path = 'friction/friction.json'").Scan(&body); err != nil || body != `{"entries": 3}` {
		t.Fatalf("the broken log was overwritten: %q (%v)", body, err)
	}
	if cfg := friction.ConfigOf(s.Settings().Friction); cfg.RevisionLimit <= 0 || cfg.TimeoutLow <= 0 {
		t.Fatalf("friction config %+v", cfg)
	}
}
