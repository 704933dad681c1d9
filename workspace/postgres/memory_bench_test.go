package postgres

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// BenchmarkMemoryPut: a memory put as one statement (the driver's
// PutMemory) against the same put in five (BEGIN, the row FOR UPDATE, the
// write, the event, COMMIT: sqlstore.PutMemoryIn in a transaction, as
// before), alternated within each round so that both meet the same load:
// one writer's median latency, and the puts a second of 8 and 16 writers
// at once, each on keys of its own. Run it with
//
//	go test -run '^$' -bench MemoryPut -benchtime 5x ./workspace/postgres/
func BenchmarkMemoryPut(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	d := driver{s}
	put := map[string]func(req workspace.MemoryPutRequest) error{
		"one": func(req workspace.MemoryPutRequest) error {
			_, err := s.PutMemory(ctx, req)
			return err
		},
		"five": func(req workspace.MemoryPutRequest) error {
			p, err := sqlstore.NewMemoryPut(ctx, req, sqlstore.Now())
			if err != nil {
				return err
			}
			return d.Write(ctx, func(tx sqlstore.Executor) error {
				_, _, err := sqlstore.PutMemoryIn(ctx, tx, dialect, p)
				return err
			})
		},
	}
	req := func(w, i int) workspace.MemoryPutRequest {
		return workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", fmt.Sprint("w", w)}, Key: fmt.Sprint("k", i%10), Value: kibObject, Agent: "a"}
	}
	const each = 40
	latency := func(how string) time.Duration {
		ts := make([]time.Duration, 0, each)
		for i := range each {
			t0 := time.Now()
			if err := put[how](req(0, i)); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(t0))
		}
		slices.Sort(ts)
		return ts[len(ts)/2]
	}
	rate := func(how string, writers int) float64 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if err := put[how](req(w, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(writers*each) / time.Since(t0).Seconds()
	}
	latency("one")
	latency("five") // warm up
	sum := map[string]float64{}
	for r := 0; b.Loop(); r++ {
		order := []string{"one", "five"}
		if r%2 == 1 {
			order = []string{"five", "one"}
		}
		for _, how := range order {
			sum[how+"-ms"] += float64(latency(how).Microseconds()) / 1000
			sum[how+"-8/s"] += rate(how, 8)
			sum[how+"-16/s"] += rate(how, 16)
		}
	}
	for k, v := range sum {
		b.ReportMetric(v/float64(b.N), k)
	}
}

// BenchmarkMemoryPutStatement: PostgreSQL's own cost of a single memory
// put, the statement the driver sends for a token's PUT (its grant guard
// and its event included), against the upsert LangGraph.js's
// PostgresStore sends for its put, into a table of that store's shape
// (jsonb value, its GIN and expiry indexes) in the same schema: the peer's
// as node-postgres sends it (an unnamed statement, parsed and planned each
// time), and prepared, as pgx sends ours. Each way runs on one
// connection, alternated within each round; the puts of each way go to 100
// keys of their own, so that all but the first are updates. It reports each
// way's median µs a put and, on Linux, its backend's CPU a put
// (/proc/PID/schedstat of the server's process, on the same machine), once
// with each commit waiting for its flush and once without (the
// statement's own work, without the disk). Run it with
//
//	go test -run '^$' -bench MemoryPutStatement -benchtime 6x ./workspace/postgres/
func BenchmarkMemoryPutStatement(b *testing.B) {
	ctx := context.Background()
	s, _ := newStore(b)
	const sum = "c026ac79254dd641a86cc06e10901c11ed5cf96b6e5bb29e4892dbb31875bfca"
	doc := `{"agent":"bench","sha256":"` + sum + `","tasks":["t1"],"global_memory":"write"}`
	if _, err := s.pool.Exec(ctx, `INSERT INTO tokens (sha256, n, doc) VALUES ($1, 1, $2)`, sum, doc); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `CREATE TABLE peer_store (namespace_path text NOT NULL, key text NOT NULL, value jsonb NOT NULL,
			created_at timestamptz DEFAULT CURRENT_TIMESTAMP, updated_at timestamptz DEFAULT CURRENT_TIMESTAMP,
			expires_at timestamptz, PRIMARY KEY (namespace_path, key));
		CREATE INDEX ON peer_store (namespace_path);
		CREATE INDEX ON peer_store USING gin (value);
		CREATE INDEX ON peer_store (expires_at) WHERE expires_at IS NOT NULL`); err != nil {
		b.Fatal(err)
	}
	value := []byte(`{"i":1,"text":"memory number 1","tags":["bench","node"],"score":0.14285714285714285}`)
	guarded := workspace.WithGrantGuard(ctx, workspace.GrantGuard{SHA256: sum, Doc: doc})
	const peerUpsert = `INSERT INTO peer_store (namespace_path, key, value, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (namespace_path, key) DO UPDATE SET value = $3, expires_at = $4, updated_at = CURRENT_TIMESTAMP`
	type way struct {
		name string
		put  func(c *pgxpool.Conn, i int) error
	}
	ways := []way{
		{"ours", func(c *pgxpool.Conn, i int) error {
			req := workspace.MemoryPutRequest{Namespace: workspace.Namespace{"bench", "seq"}, Key: fmt.Sprint("k", i%100), Value: value, Agent: "bench"}
			p, err := sqlstore.NewMemoryPut(guarded, req, sqlstore.Now())
			if err != nil {
				return err
			}
			q, args := memoryStatement(p)
			var created time.Time
			var version int
			return c.QueryRow(ctx, q, args...).Scan(&created, &version)
		}},
		{"peer", func(c *pgxpool.Conn, i int) error {
			_, err := c.Exec(ctx, peerUpsert, pgx.QueryExecModeExec, "bench:seq", fmt.Sprint("k", i%100), string(value), nil)
			return err
		}},
		{"peer-prepared", func(c *pgxpool.Conn, i int) error {
			_, err := c.Exec(ctx, peerUpsert, "bench:seq", fmt.Sprint("k", i%100), string(value), nil)
			return err
		}},
	}
	for _, commit := range []string{"flushed", "unflushed"} {
		b.Run(commit, func(b *testing.B) {
			conns := make([]*pgxpool.Conn, len(ways))
			pids := make([]int, len(ways))
			for i := range ways {
				c, err := s.pool.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Release()
				mode := map[string]string{"flushed": "on", "unflushed": "off"}[commit]
				if _, err := c.Exec(ctx, "SET synchronous_commit = "+mode); err != nil {
					b.Fatal(err)
				}
				if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pids[i]); err != nil {
					b.Fatal(err)
				}
				conns[i] = c
				for k := range 20 { // prepared, past the custom plans
					if err := ways[i].put(c, k); err != nil {
						b.Fatal(ways[i].name, ": ", err)
					}
				}
			}
			const each = 200
			times := make([][]time.Duration, len(ways))
			cpu := make([]time.Duration, len(ways))
			round := 0
			for b.Loop() {
				for j := range ways {
					i := (j + round) % len(ways)
					c0 := backendCPU(pids[i])
					for k := range each {
						t0 := time.Now()
						if err := ways[i].put(conns[i], k); err != nil {
							b.Fatal(ways[i].name, ": ", err)
						}
						times[i] = append(times[i], time.Since(t0))
					}
					cpu[i] += backendCPU(pids[i]) - c0
				}
				round++
			}
			for i, w := range ways {
				slices.Sort(times[i])
				b.ReportMetric(float64(times[i][len(times[i])/2].Nanoseconds())/1e3, w.name+"-µs/put")
				if cpu[i] > 0 {
					b.ReportMetric(float64(cpu[i].Nanoseconds())/1e3/float64(len(times[i])), w.name+"-backend-cpu-µs/put")
				}
			}
		})
	}
}

// backendCPU is the time PostgreSQL's process pid has spent on a CPU
// (/proc/PID/schedstat); 0 where it cannot be read.
func backendCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}
