package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// TestConcurrentWritersFollowedOnceInOrder: 16 writers at once put env
// data (their own keys and two shared ones) and append events, while one
// transaction holds an event open from before they start until after
// they end. Two followers and a reader going on from positions each get
// every event exactly once, the held one included, all in one order,
// and the versions of a shared key in the order they were given.
func TestConcurrentWritersFollowedOnceInOrder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "writers"}); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		mu  sync.Mutex
		got []string
	}
	var followers [2]seen
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range followers {
		f := &followers[i]
		wg.Go(func() {
			if err := s.FollowEvents(fctx, "t1", true, 100*time.Millisecond, func(e workspace.Event) {
				f.mu.Lock()
				f.got = append(f.got, key(e))
				f.mu.Unlock()
			}); err != nil {
				t.Errorf("follow: %v", err)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	// A reader going on from the positions it is given, as the panel
	// and the API do.
	var reader seen
	wg.Go(func() {
		var pos int64
		for fctx.Err() == nil {
			next, err := s.ReadEventsFrom(fctx, "t1", pos, func(e workspace.PositionedEvent) {
				reader.mu.Lock()
				reader.got = append(reader.got, key(e.Event))
				reader.mu.Unlock()
			})
			if err != nil && fctx.Err() == nil {
				t.Errorf("read from %d: %v", pos, err)
				return
			}
			pos = next
			select {
			case <-fctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	})

	held, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx)
	// It sits idle for as long as the writers take, on a loaded machine
	// longer than the store's bound on an idle transaction.
	if _, err := held.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ('t1', now(), $1)",
		workspace.FormatEvent(workspace.Event{Time: now(), Name: "held", TaskID: "t1"})); err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 25
	var ww sync.WaitGroup
	for w := range writers {
		ww.Go(func() {
			sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
			for i := range each {
				k := fmt.Sprintf("w%d", w)
				if i%2 == 1 {
					k = fmt.Sprintf("shared%d", i%4/2)
				}
				if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: k, Description: "d", Value: []byte(strconv.Itoa(i)), Agent: "po"}); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if err := s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1", Args: []string{fmt.Sprintf("%d.%d", w, i)}}); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	ww.Wait()
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	total := 2 + 2*writers*each // PutTask's task_created, the held event, two of each write
	all, _, err := s.ReadEvents(ctx, "t1")
	if err != nil || len(all) != total {
		t.Fatalf("ReadEvents: %d events (%v), want %d", len(all), err, total)
	}
	var orders [][]string
	for i, f := range []*seen{&followers[0], &followers[1], &reader} {
		poll.Until(t, time.Minute, fmt.Sprintf("reader %d has every event", i), func() (bool, string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			return len(f.got) >= total, fmt.Sprintf("%d of %d", len(f.got), total)
		})
		f.mu.Lock()
		got := slices.Clone(f.got)
		f.mu.Unlock()
		once := map[string]bool{}
		for _, k := range got {
			if once[k] {
				t.Fatalf("reader %d got %s twice", i, k)
			}
			once[k] = true
		}
		if len(got) != total || !once["held"] {
			t.Fatalf("reader %d got %d events (the held one: %v), want %d", i, len(got), once["held"], total)
		}
		orders = append(orders, got)
	}
	for i := 1; i < len(orders); i++ {
		if !slices.Equal(orders[i], orders[0]) {
			for j := range orders[0] {
				if orders[i][j] != orders[0][j] {
					t.Fatalf("reader %d read another order than reader 0: at %d %v vs %v", i, j, orders[i][max(0, j-3):min(len(orders[i]), j+4)], orders[0][max(0, j-3):min(len(orders[0]), j+4)])
				}
			}
		}
	}
	// Each shared key's versions in the order given.
	last := map[string]int{}
	for _, k := range orders[0] {
		var name string
		var v int
		if n, _ := fmt.Sscanf(k, "env_stored %s %d", &name, &v); n == 2 && name != "" && name[0] == 's' {
			if v != last[name]+1 {
				t.Errorf("%s version %d after %d", name, v, last[name])
			}
			last[name] = v
		}
	}
}

// key names an event of the test: a probe by its argument, an entry's
// by its key and version.
func key(e workspace.Event) string {
	switch e.Name {
	case "probe":
		return "probe " + e.Args[0]
	case "env_stored":
		return "env_stored " + e.Attrs["key"] + " " + e.Attrs["version"]
	}
	return e.Name
}
