package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workspaced/workspaced/workspace"
)

// countLog counts the daemon's log messages by text.
type countLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *countLog) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.n[r.Message]++
	c.mu.Unlock()
	return nil
}
func (c *countLog) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *countLog) WithGroup(string) slog.Handler      { return c }
func (c *countLog) get(msg string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[msg]
}

// TestNoLostWakeUp: with the periodic poll an hour away, agents on many
// connections insert markers in rounds separated by random pauses (so the
// daemon goes between awake and listening again and again), some of them
// keeping their transaction open a moment after the insert; every round's
// markers are all applied, each exactly once. A wake-up lost (an agent
// that read listening = false committing after the daemon's last look)
// would leave a round's marker waiting an hour.
func TestNoLostWakeUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := newStore(t)
	setup := lead(t, s, "setup")
	const agents, rounds, most = 8, 40, 3
	for g := range agents {
		plannedTask(t, s, fmt.Sprintf("t%d", g), rounds*most, setup)
	}
	if err := s.Release(ctx, setup); err != nil {
		t.Fatal(err)
	}
	logs := &countLog{n: map[string]int{}}
	served := make(chan error, 1)
	go func() {
		served <- s.Serve(ctx, ServeConfig{Holder: "d1", Poll: time.Hour, Linger: 2 * time.Millisecond, Logger: slog.New(logs)})
	}()
	pcfg, err := pgxpool.ParseConfig(s.conn)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.ConnConfig.RuntimeParams["search_path"] = s.schema
	pcfg.MaxConns = agents
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var inserted [agents]int
	var failed atomic.Bool
	for r := range rounds {
		var wg sync.WaitGroup
		for g := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := 1 + rand.IntN(most)
				for range k {
					sub := fmt.Sprintf("s%d", inserted[g])
					inserted[g]++
					if err := insertClaim(ctx, pool, fmt.Sprintf("t%d", g), fmt.Sprintf("w%d", g), sub, r%2 == g%2); err != nil {
						t.Error(err)
						failed.Store(true)
						return
					}
				}
			}()
		}
		wg.Wait()
		if failed.Load() {
			t.FailNow()
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var waiting int
			if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM markers").Scan(&waiting); err != nil {
				t.Fatal(err)
			}
			if waiting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d markers still waiting after 10 s (the daemon went to LISTEN %d times)", r, waiting, logs.get("listening"))
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(6000)) * time.Microsecond)
	}
	for g := range agents {
		id := fmt.Sprintf("t%d", g)
		var n, names int
		if err := s.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT name) FROM journal WHERE task_id = $1 AND name LIKE '.claim.w%'", id).Scan(&n, &names); err != nil {
			t.Fatal(err)
		}
		if n != inserted[g] || names != n {
			t.Fatalf("task %s: %d claims journaled (%d distinct), %d inserted", id, n, names, inserted[g])
		}
		st := checkRebuild(t, s, id)
		if len(st.Errors) != 0 {
			t.Fatalf("task %s: errors %v", id, st.Errors)
		}
	}
	// The rounds did exercise the way back to LISTEN.
	t.Logf("back to LISTEN %d times, awake %d times, in %d rounds", logs.get("listening"), logs.get("awake"), rounds)
	if n := logs.get("listening"); n < rounds/4 {
		t.Fatalf("the daemon went back to LISTEN %d times in %d rounds; want at least %d", n, rounds, rounds/4)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// insertClaim inserts a claim as an agent in any language would; slow
// keeps the transaction open a moment after the insert.
func insertClaim(ctx context.Context, pool *pgxpool.Pool, task, agent, sub string, slow bool) error {
	body, err := json.Marshal(workspace.Marker{AgentID: agent, SubtaskID: sub})
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, "INSERT INTO markers (task_id, kind, name, body) VALUES ($1, 'claim', $2, $3)",
		task, ".claim."+agent+"."+sub, string(body)); err != nil {
		return err
	}
	if slow {
		time.Sleep(time.Duration(rand.IntN(15000)) * time.Microsecond)
	}
	return tx.Commit(ctx)
}

// TestMarkersNotifyOnlyWhileListening: an insert notifies once per task
// it names while the wake row says the daemon listens, and not at all
// while it is awake; a transaction that is not READ COMMITTED always
// notifies.
func TestMarkersNotifyOnlyWhileListening(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	for _, id := range []string{"a", "b"} {
		if err := s.PutTask(ctx, workspace.Task{ID: id, Description: "test task"}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.connectOne(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if _, err := l.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO markers (task_id, kind, body) VALUES ('a', 'claim', '{}'), ('b', 'claim', '{}'), ('a', 'done', '{}')"
	// heard runs q, then notifies "end" itself, and returns the task ids
	// notified before it, sorted.
	heard := func(q string) []string {
		t.Helper()
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, 'end')", s.channel()); err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			n, err := l.WaitForNotification(wctx)
			cancel()
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			if n.Payload == "end" {
				slices.Sort(got)
				return got
			}
			got = append(got, n.Payload)
		}
	}
	for _, c := range []struct {
		listening bool
		q         string
		want      []string
	}{
		{true, insert, []string{"a", "b"}},
		{false, insert, nil},
		{false, "BEGIN ISOLATION LEVEL REPEATABLE READ; " + insert + "; COMMIT", []string{"a", "b"}},
		{true, "BEGIN ISOLATION LEVEL SERIALIZABLE; " + insert + "; COMMIT", []string{"a", "b"}},
	} {
		if _, err := s.pool.Exec(ctx, "UPDATE wake SET listening = $1", c.listening); err != nil {
			t.Fatal(err)
		}
		if got := heard(c.q); !slices.Equal(got, c.want) {
			t.Errorf("listening %v, %s: notified %q, want %q", c.listening, c.q, got, c.want)
		}
	}
}
