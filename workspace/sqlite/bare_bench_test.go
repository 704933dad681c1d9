package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The bare bounds: what SQLite itself costs for the protocol's
// transactions on this disk, with none of the store's work on the path
// (no JSON, no schema check, no wake-up to wait for) — the least any
// daemon could do here, beside the same floor as the benchmarks above:
//
//	go test ./workspace/sqlite -run '^$' -bench Bare -benchtime 200x

// bareConn is one connection of its own to the workspace's file, with the
// store's pragmas and sync.
func bareConn(b *testing.B, s *Store, synchronous string) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", dsn(s.Path(), "immediate", synchronous))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db
}

func bareExec(b *testing.B, db *sql.DB, q string, args ...any) {
	b.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkClaimVerdictBare: one claim → its verdict with SQLite's work
// alone, one step after the other in one goroutine: the claim's insert
// (docs/PROTOCOL.md, section 11), the daemon's smallest transaction (read
// the marker and the state, journal the marker, write the state back
// unchanged, delete the marker; synchronous=FULL) and the read of the
// journal row. Two ways: the insert made durable before the daemon reads
// it (synced, as the store does), and not synced at all (as if the
// verdict's commit were to make it durable). The bound of
// BenchmarkClaimVerdict, which adds the wake-ups and the state machine.
func BenchmarkClaimVerdictBare(b *testing.B) {
	b.Run("synced", func(b *testing.B) { claimVerdictBare(b, true) })
	b.Run("unsynced", func(b *testing.B) { claimVerdictBare(b, false) })
}

func claimVerdictBare(b *testing.B, synced bool) {
	s, fl := benchStore(b)
	if _, err := s.CreateTask(b.Context(), workspace.NewTaskRequest{ID: "t", Description: "bare"}); err != nil {
		b.Fatal(err)
	}
	agent, daemon := bareConn(b, s, "NORMAL"), bareConn(b, s, "FULL")
	doc := `{"task_id":"t","status":"executing","subtasks":{` + bareSubtasks(32) + `}}`
	bareExec(b, daemon, "INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ('t', 0, $1, 0)", doc)
	var (
		lat, floors []time.Duration
		seq         int64
	)
	for b.Loop() {
		floors = append(floors, fl.sample(b, 1)...)
		seq++
		name := fmt.Sprintf(".claim.a.%d", seq)
		t := time.Now()
		bareExec(b, agent, `INSERT INTO markers (task_id, kind, name, body) VALUES ('t', 'claim', $1, '{"agent_id":"a","subtask_id":"st_1"}')`, name)
		if synced {
			if err := syncWAL(s.Path()); err != nil {
				b.Fatal(err)
			}
		}
		bareCommit(b, daemon, seq)
		var rec string
		if err := agent.QueryRow("SELECT record FROM journal WHERE task_id = 't' AND name = $1", name).Scan(&rec); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.ReportMetric(p50ms(lat), "p50-ms")
	b.ReportMetric(p50ms(floors), "floor-p50-ms")
	b.ReportMetric(p50ms(lat)/p50ms(floors), "x-floor")
}

func bareSubtasks(n int) string {
	out := ""
	for i := 1; i <= n; i++ {
		if i > 1 {
			out += ","
		}
		out += fmt.Sprintf(`"st_%d":{"status":"pending"}`, i)
	}
	return out
}

// bareCommit is the daemon's smallest commit of the one marker waiting.
func bareCommit(b *testing.B, db *sql.DB, seq int64) {
	b.Helper()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	var (
		id         int64
		name, body string
		doc        string
	)
	if err := tx.QueryRow("SELECT id, name, body FROM markers WHERE task_id = 't' ORDER BY id LIMIT 1").Scan(&id, &name, &body); err != nil {
		b.Fatal(err)
	}
	if err := tx.QueryRow("SELECT doc FROM states WHERE task_id = 't'").Scan(&doc); err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ('t', $1, 'now', $2, $3, 0)", []any{seq, name, body}},
		{"UPDATE states SET journal_seq = $1, doc = $2 WHERE task_id = 't'", []any{seq, doc}},
		{"DELETE FROM markers WHERE id = $1", []any{id}},
	} {
		if _, err := tx.Exec(st.q, st.args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInsertsBare32: 32 connections (as 32 agent processes have)
// each inserting one marker at the same moment, with the statement of
// docs/PROTOCOL.md in a transaction of its own, synchronous=OFF: no sync
// at all, so more than any durable insert can do; queued as the store
// queues its writers. markers/s ÷ one commit per marker at the floor's
// p50: the bound of BenchmarkInsertsAlone32 and so of
// BenchmarkAgentsAtOnce32.
func BenchmarkInsertsBare32(b *testing.B) {
	s, fl := benchStore(b)
	ctx := b.Context()
	const n = 32
	agents := make([]*sql.DB, n)
	queues := make([]*writeQueue, n)
	for i := range agents {
		agents[i], queues[i] = bareConn(b, s, "OFF"), newWriteQueue(s.Path())
		b.Cleanup(func() { queues[i].close() })
	}
	var (
		wall    time.Duration
		markers int
		floors  []time.Duration
	)
	round := 0
	for b.Loop() {
		b.StopTimer()
		round++
		task := fmt.Sprintf("t%d", round)
		if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: task, Description: "bare inserts"}); err != nil {
			b.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, db := range agents {
			wg.Go(func() {
				<-start
				if err := queues[i].lock(ctx); err != nil {
					b.Error(err)
					return
				}
				defer queues[i].unlock()
				if _, err := db.Exec(`INSERT INTO markers (task_id, kind, name, body) VALUES ($1, 'done', $2, '{"agent_id":"a","subtask_id":"st_1"}')`,
					task, fmt.Sprintf(".done.agent_%d.x", i)); err != nil {
					b.Error(err)
				}
			})
		}
		b.StartTimer()
		t0 := time.Now()
		close(start)
		wg.Wait()
		wall += time.Since(t0)
		b.StopTimer()
		markers += n
		floors = append(floors, fl.sample(b, 32)...)
		b.StartTimer()
	}
	rate := float64(markers) / wall.Seconds()
	fp := p50ms(floors)
	b.ReportMetric(rate, "markers/s")
	b.ReportMetric(fp, "floor-p50-ms")
	b.ReportMetric(rate/(1000/fp), "x-floor")
}

// BenchmarkEnvStoreBare: an entry stored with SQLite's work alone — the
// store's upsert of a 1 KiB value and the insert of its env_stored event,
// in one transaction (synchronous=FULL), with no check, no task lookup
// and no queue: the bound of BenchmarkEnvStore1KiB.
func BenchmarkEnvStoreBare(b *testing.B) {
	s, fl := benchStore(b)
	if _, err := s.CreateTask(b.Context(), workspace.NewTaskRequest{ID: "bench", Description: "bare"}); err != nil {
		b.Fatal(err)
	}
	db := bareConn(b, s, "FULL")
	value := `"` + strings.Repeat("x", 1022) + `"`
	paired(b, fl, func(i int) {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		at := time.Now().UTC().Format(timeFormat)
		var (
			created string
			version int
		)
		if err := tx.QueryRow(`INSERT INTO entries AS e (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ('thread', 'bench', $1, 'bench', 'bench', $2, $2, 1, $3, $4)
			ON CONFLICT (scope, owner, key) DO UPDATE SET short_description = excluded.short_description,
				stored_by = excluded.stored_by, updated_at = excluded.updated_at, version = e.version + 1,
				size = excluded.size, value = excluded.value
			RETURNING created_at, version`, fmt.Sprintf("k%d", i%64), at, len(value), value).Scan(&created, &version); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO events (task_id, time, line) VALUES ('bench', $1, $2)",
			at, fmt.Sprintf("%s env_stored key=k%d agent=bench version=%d", at, i%64, version)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	})
}
