package bench

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// The scale rows' lone floor: what any daemon must spend on a lone
// marker, measured as the daemon is. A process of its own
// (ScaleOptions.FloorCmd, running LoneFloorMain: lonefloor_main.go says
// exactly what it does) sleeps on a watch of a directory the harness
// prepared, beside the workspace's, holding the row's state document; the
// harness drops the same number of markers one at a time, each once the
// state showed the one before, after one to warm up, and reads the
// process's CPU clock before and after them, as for the daemon's lone
// markers. On files the harness drops each marker as the Go agents do
// (temporary file written and fsynced in the directory, renamed, the
// directory fsynced) and waits for state.json renamed into place; on
// SQLite it inserts a marker row in its own transaction and waits for the
// state row's sequence to reach it. PostgreSQL has none.

// LoneFloor is the lone floor of a row: the floor process's CPU per
// marker (all its threads, from its CPU clock) and the markers' latency
// (drop → the state seen showing it).
type LoneFloor struct {
	Markers int     `json:"markers"`
	CPUms   float64 `json:"cpu_ms_per_marker"`
	P50     float64 `json:"p50_ms"`
}

// loneFloorDrop is the harness's side of one store's lone floor.
type loneFloorDrop interface {
	// drop drops marker i, prepared before the time t it returns (as an
	// agent's drop is timed).
	drop(i int) (t time.Time, err error)
	// shows says whether the state shows marker i, called after each
	// event of the directory's watch and every millisecond.
	shows(i int) (bool, error)
	// check says what is wrong with what the process left after n
	// markers, or nil.
	check(n int) error
	close()
}

// scaleLoneFloor measures the lone floor on store ("files" or "sqlite")
// with markers markers and the state document doc, the process started
// with cmd.
func scaleLoneFloor(ctx context.Context, cmd []string, store, base string, doc []byte, markers int) (LoneFloor, error) {
	dir, err := os.MkdirTemp(base, "lone-floor-"+store+"-")
	if err != nil {
		return LoneFloor{}, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	var d loneFloorDrop
	switch store {
	case "files":
		d, err = newFilesLoneFloorDrop(dir, doc)
	case "sqlite":
		d, err = newSQLiteLoneFloorDrop(ctx, dir, doc)
	default:
		return LoneFloor{}, fmt.Errorf("bench: no lone floor on %s", store)
	}
	if err != nil {
		return LoneFloor{}, fmt.Errorf("bench: the lone floor: %w", err)
	}
	defer d.close()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return LoneFloor{}, err
	}
	defer fw.Close()
	if err := fw.Add(dir); err != nil {
		return LoneFloor{}, err
	}
	p, err := spawnAgent(append(append([]string{}, cmd...), "--store", store, "--dir", dir), newCommits(), "lone floor")
	if err != nil {
		return LoneFloor{}, err
	}
	defer p.close()
	if err := p.ready(); err != nil {
		return LoneFloor{}, err
	}
	one := func(i int) (time.Duration, error) {
		t, err := d.drop(i)
		if err != nil {
			return 0, fmt.Errorf("bench: the lone floor's marker %d: %w", i, err)
		}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		deadline := time.After(time.Minute)
		for {
			ok, err := d.shows(i)
			at := time.Now()
			if err != nil || ok {
				return at.Sub(t), err
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-deadline:
				return 0, fmt.Errorf("bench: the lone floor did not take marker %d in a minute", i)
			case _, ok := <-p.lines:
				if !ok {
					return 0, errors.New("bench: the lone floor's process exited early (what it said is above, on stderr)")
				}
			case <-fw.Events:
			case <-tick.C:
			}
		}
	}
	if _, err := one(1); err != nil { // the warm-up
		return LoneFloor{}, err
	}
	f, err := timeLone(p.cmd.Process.Pid, markers, one)
	if err != nil {
		return LoneFloor{}, err
	}
	p.close()
	if err := d.check(1 + markers); err != nil {
		return LoneFloor{}, fmt.Errorf("bench: the lone floor: %w", err)
	}
	return LoneFloor{Markers: f.Markers, CPUms: f.CPUms, P50: f.P50}, nil
}

// filesLoneFloorDrop drops marker files as the Go agents do.
type filesLoneFloorDrop struct {
	dir   string
	agent *fileDropper
	doc   []byte // the state as the harness wrote it
}

func newFilesLoneFloorDrop(dir string, doc []byte) (*filesLoneFloorDrop, error) {
	if err := os.Mkdir(filepath.Join(dir, "journal"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "events.log"), nil, 0o644); err != nil {
		return nil, err
	}
	// The byte the process changes starts as no marker's.
	doc = append([]byte(nil), doc...)
	doc[len(doc)/2] = '#'
	if err := os.WriteFile(filepath.Join(dir, "state.json"), doc, 0o644); err != nil {
		return nil, err
	}
	// The dropper's store is for close, which this one never calls.
	return &filesLoneFloorDrop{dir: dir, agent: &fileDropper{dir: dir, name: "agent_1"}, doc: doc}, nil
}

func (f *filesLoneFloorDrop) drop(i int) (time.Time, error) {
	h, err := f.agent.prepare(fmt.Sprintf("st_%d", i))
	if err != nil {
		return time.Time{}, err
	}
	t := time.Now()
	return t, f.agent.drop(h)
}

// shows reads state.json: the process changes one byte of it a marker,
// to 'a' + its sequence number mod 26.
func (f *filesLoneFloorDrop) shows(i int) (bool, error) {
	b, err := os.ReadFile(filepath.Join(f.dir, "state.json"))
	if err != nil || len(b) != len(f.doc) {
		return false, err
	}
	return b[len(b)/2] == byte('a'+i%26), nil
}

// check: every marker journaled, none left, one event line each.
func (f *filesLoneFloorDrop) check(n int) error {
	es, err := os.ReadDir(filepath.Join(f.dir, "journal"))
	if err != nil {
		return err
	}
	left, err := filepath.Glob(filepath.Join(f.dir, workspace.DonePrefix+"*"))
	if err != nil {
		return err
	}
	log, err := os.ReadFile(filepath.Join(f.dir, "events.log"))
	if err != nil {
		return err
	}
	if len(es) != n || len(left) != 0 || bytes.Count(log, []byte("\n")) != n {
		return fmt.Errorf("%d markers dropped: %d journaled, %d left, %d events logged", n, len(es), len(left), bytes.Count(log, []byte("\n")))
	}
	return nil
}

func (f *filesLoneFloorDrop) close() {}

// sqliteLoneFloorDrop inserts marker rows, each in its own transaction.
type sqliteLoneFloorDrop struct {
	db *sql.DB
}

func newSQLiteLoneFloorDrop(ctx context.Context, dir string, doc []byte) (*sqliteLoneFloorDrop, error) {
	db, err := sql.Open("sqlite", lonefloorDSN(dir))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE markers (name TEXT PRIMARY KEY, body TEXT NOT NULL)",
		"CREATE TABLE journal (seq INTEGER PRIMARY KEY, name TEXT NOT NULL, body TEXT NOT NULL)",
		"CREATE TABLE events (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, line TEXT NOT NULL)",
		"CREATE TABLE state (k TEXT PRIMARY KEY, v TEXT NOT NULL, seq INTEGER NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, err
		}
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO state (k, v, seq) VALUES ('state', ?, 0)", string(doc)); err != nil {
		db.Close()
		return nil, err
	}
	return &sqliteLoneFloorDrop{db: db}, nil
}

func (s *sqliteLoneFloorDrop) drop(i int) (time.Time, error) {
	sub := fmt.Sprintf("st_%d", i)
	now := time.Now().UTC()
	body, err := atomicfile.Marshal(workspace.Marker{AgentID: "agent_1", SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed", CompletedAt: &now})
	if err != nil {
		return time.Time{}, err
	}
	t := time.Now()
	_, err = s.db.Exec("INSERT INTO markers (name, body) VALUES (?, ?)", workspace.DonePrefix+"agent_1."+sub, string(body))
	return t, err
}

func (s *sqliteLoneFloorDrop) shows(i int) (bool, error) {
	var seq int
	err := s.db.QueryRow("SELECT seq FROM state WHERE k = 'state'").Scan(&seq)
	return seq >= i, err
}

func (s *sqliteLoneFloorDrop) check(n int) error {
	var journaled, left, logged int
	err := s.db.QueryRow("SELECT (SELECT count(*) FROM journal), (SELECT count(*) FROM markers), (SELECT count(*) FROM events)").Scan(&journaled, &left, &logged)
	if err != nil {
		return err
	}
	if journaled != n || left != 0 || logged != n {
		return fmt.Errorf("%d markers dropped: %d journaled, %d left, %d events logged", n, journaled, left, logged)
	}
	return nil
}

func (s *sqliteLoneFloorDrop) close() { s.db.Close() }

// loneFloorNote says in the report what the lone floor is.
const loneFloorNote = "a process of its own doing only what the contract makes any daemon do for a lone marker, " +
	"measured as the daemon's lone markers are (its CPU clock, as many markers, one at a time): " +
	"on files, woken by an inotify watch, it reads the marker, renames it into journal/ and fsyncs that, " +
	"appends a line to events.log and writes state.json of the row's size with atomicfile; " +
	"on SQLite, woken by a watch of the database's files, one transaction reads the marker, " +
	"inserts its journal and event rows, updates the state row of the row's size and deletes the marker; " +
	"the daemon's GOGC and timer slack; none on PostgreSQL"
