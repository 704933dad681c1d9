package bench

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
)

// The scale rows' floor: the bare cost of writing a state document of the
// row's size in the row's store, once per commit, measured in the same
// run by this process — on files, atomicfile.WriteFile of the same bytes
// (a temporary file written, fsynced, renamed over state.json, the
// directory fsynced), as the daemon writes state.json; on SQLite one
// UPDATE of a row holding the same bytes in its own transaction, in a
// database file of its own beside the workspace's with the store's
// pragmas (WAL, synchronous=FULL); on PostgreSQL the same UPDATE in a
// table of the rig's schema. The CPU is the writing thread's (getrusage
// RUSAGE_THREAD, the goroutine locked to it), user and system: a floor
// for the daemon's CPU per marker when the whole document must be
// written. The daemon writes more (its backup, the journal, the events,
// the markers deleted) and does more (the machine, the encoding).

// ScaleFloorWrites writes of the document make a floor.
const ScaleFloorWrites = 30

// ScaleFloor is one floor: the writing thread's CPU per write and the
// writes' latency.
type ScaleFloor struct {
	Writes int     `json:"writes"`
	CPUms  float64 `json:"cpu_ms_per_write"`
	P50    float64 `json:"p50_ms"`
}

// floorWriter writes one document to the store's floor, a value of its
// own each time (a store may skip a write of the same bytes).
type floorWriter interface {
	write(ctx context.Context, doc []byte) error
	close()
}

// scaleFloor measures the floor of a document of doc's size in r's store.
func (r *rig) scaleFloor(ctx context.Context, base string, doc []byte) (ScaleFloor, error) {
	fw, err := r.newFloorWriter(ctx, base, doc)
	if err != nil {
		return ScaleFloor{}, err
	}
	defer fw.close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	doc = append([]byte(nil), doc...)
	lat := make([]time.Duration, 0, ScaleFloorWrites)
	var cpu time.Duration
	for i := range ScaleFloorWrites + 1 { // the first one warms up
		doc[len(doc)/2] = byte('a' + i%26)
		c0, err := threadCPU()
		if err != nil {
			return ScaleFloor{}, err
		}
		t := time.Now()
		if err := fw.write(ctx, doc); err != nil {
			return ScaleFloor{}, fmt.Errorf("bench: the floor's write: %w", err)
		}
		d := time.Since(t)
		c1, err := threadCPU()
		if err != nil {
			return ScaleFloor{}, err
		}
		if i > 0 {
			lat, cpu = append(lat, d), cpu+c1-c0
		}
	}
	f := figures(lat, cpu)
	return ScaleFloor{Writes: f.Markers, CPUms: f.CPUms, P50: f.P50}, nil
}

// newFloorWriter makes the floor of r's store: on files and SQLite in a
// directory of base's own (outside what the harness watches), on
// PostgreSQL a table in the rig's schema.
func (r *rig) newFloorWriter(ctx context.Context, base string, doc []byte) (floorWriter, error) {
	switch {
	case r.pg != nil:
		pool := r.pg.s.Pool()
		if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_scale_floor (k text PRIMARY KEY, v text NOT NULL)"); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO bench_scale_floor (k, v) VALUES ('state', $1) ON CONFLICT (k) DO UPDATE SET v = excluded.v", string(doc)); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		return pgFloorWriter{r}, nil
	case r.sq != nil:
		dir, err := os.MkdirTemp(base, "floor-sqlite-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		db, err := sql.Open("sqlite", fileDSN(filepath.Join(dir, "floor.db"), "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"))
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		db.SetMaxOpenConns(1)
		_, err = db.ExecContext(ctx, "CREATE TABLE floor (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
		if err == nil {
			_, err = db.ExecContext(ctx, "INSERT INTO floor (k, v) VALUES ('state', ?)", string(doc))
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("bench: %w", err)
		}
		return sqliteFloorWriter{db}, nil
	}
	dir, err := os.MkdirTemp(base, "floor-files-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return filesFloorWriter{root}, nil
}

type filesFloorWriter struct{ root *os.Root }

func (f filesFloorWriter) write(_ context.Context, doc []byte) error {
	return atomicfile.WriteFile(f.root, "state.json", doc, 0o644)
}
func (f filesFloorWriter) close() { f.root.Close() }

type sqliteFloorWriter struct{ db *sql.DB }

func (f sqliteFloorWriter) write(ctx context.Context, doc []byte) error {
	_, err := f.db.ExecContext(ctx, "UPDATE floor SET v = ? WHERE k = 'state'", string(doc))
	return err
}
func (f sqliteFloorWriter) close() { f.db.Close() }

type pgFloorWriter struct{ r *rig }

func (f pgFloorWriter) write(ctx context.Context, doc []byte) error {
	_, err := f.r.pg.s.Pool().Exec(ctx, "UPDATE bench_scale_floor SET v = $1 WHERE k = 'state'", string(doc))
	return err
}
func (f pgFloorWriter) close() {}

// floorName says what a store's floor writes.
func floorName(store string) string {
	switch store {
	case "postgres":
		return "one UPDATE of a row holding the document, its own transaction"
	case "sqlite":
		return "one UPDATE of a row holding the document, its own transaction, WAL, synchronous=FULL, a database file of its own"
	}
	return "atomicfile.WriteFile of the document: temporary file, write, fsync, rename over state.json, directory fsync"
}
