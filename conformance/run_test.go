package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// TestMain runs the tests, four at once, on a PostgreSQL shared by the
// test binary: they wait on the stores, their daemons and their streams
// far more than they compute.
func TestMain(m *testing.M) {
	clitest.Waiting(4)
	os.Exit(pgtest.Main(m))
}

// stores are the stores every case runs on; a new store is a line here.
var stores = []struct {
	name string
	root func(t *testing.T) string
}{
	{"files", func(t *testing.T) string { return filepath.Join(t.TempDir(), "ws") }},
	{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "ws.db") }},
	{"postgres", func(t *testing.T) string {
		return pgtest.Migrated(t, func(ctx context.Context, root string) error {
			_, err := service.Init(ctx, root, service.Roles{})
			return err
		})
	}},
}

// eventually bounds a step marked eventually.
const eventually = 30 * time.Second

// TestCorpus runs every case of cases/ on every store, through the
// operations layer, each store one workspace served by the real daemon
// (the cases name what they create with placeholders, so they run side
// by side in it). A failure names the case's file and the step.
func TestCorpus(t *testing.T) {
	t.Parallel()
	cases, err := Load("cases")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range stores {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			st := openServed(t, kind.root(t))
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					t.Parallel()
					runCase(t, st, Fill(c))
				})
			}
		})
	}
}

// openServed initialises a workspace at root, opens it through the
// operations layer and serves it with the real daemon until t ends.
func openServed(t *testing.T, root string) workspace.Store {
	t.Helper()
	ctx := context.Background()
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		t.Fatalf("init %s: %v", service.Name(root), err)
	}
	st, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", service.Name(root), err)
	}
	t.Cleanup(func() { _ = st.Close() })
	served, wake, err := service.Serve(st, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	servetest.Start(t, served, daemon.Config{Rescan: time.Second, Wake: wake})
	return st
}

// runCase runs c's steps in order on st; the first that fails ends it.
func runCase(t *testing.T, st workspace.Store, c Case) {
	for i, s := range c.Steps {
		where := fmt.Sprintf("%s step %d (%s)", c.File, i, s.Op)
		check := func() string {
			res, err := do(t.Context(), st, s)
			return judge(s, res, err)
		}
		if s.Eventually {
			poll.Until(t, eventually, where, func() (bool, string) {
				msg := check()
				return msg == "", msg
			})
			continue
		}
		if msg := check(); msg != "" {
			t.Fatalf("%s: %s\n(%s)", where, msg, c.Doc)
		}
	}
}

// judge says how a step's answer (res, err) differs from what it
// expects; "" when it does not.
func judge(s Step, res any, err error) string {
	e := s.Expect
	if e == nil {
		e = &Expect{}
	}
	if e.Error != "" {
		if err == nil {
			return fmt.Sprintf("want error %s, got result %s", e.Error, show(res))
		}
		if k := kindOf(err); k != e.Error {
			return fmt.Sprintf("want error %s, got %s: %v", e.Error, k, err)
		}
		var vc *versionConflict
		if e.CurrentVersion != nil && (!errors.As(err, &vc) || vc.current != *e.CurrentVersion) {
			return fmt.Sprintf("want a version conflict at current version %d, got %v", *e.CurrentVersion, err)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("want success, got error %s: %v", kindOf(err), err)
	}
	if s.Verdict != "" {
		if d := Match(map[string]any{"verdict": map[string]any{"verdict": s.Verdict}}, res); d != "" {
			return "the daemon's verdict: " + d
		}
	}
	if e.Result != nil {
		return Match(e.Result, res)
	}
	return ""
}

// versionConflict is a compare-and-set refused, with the version stored
// now (0: none), as the HTTP API reports it.
type versionConflict struct {
	current int
	err     error
}

func (e *versionConflict) Error() string {
	return fmt.Sprintf("version conflict (current version %d): %v", e.current, e.err)
}
func (e *versionConflict) Unwrap() error { return e.err }

// kindOf is err's kind as the HTTP API names it (api/problem.go).
func kindOf(err error) string {
	var vc *versionConflict
	switch {
	case errors.As(err, &vc):
		return "version_conflict"
	case errors.Is(err, workspace.ErrNotFound):
		return "not_found"
	case errors.Is(err, workspace.ErrConflict):
		return "conflict"
	case errors.Is(err, workspace.ErrLocked):
		return "locked"
	case errors.Is(err, workspace.ErrNotServing):
		return "not_serving"
	case errors.Is(err, workspace.ErrNoVerdict):
		return "no_verdict"
	case errors.Is(err, workspace.ErrInvalid):
		return "invalid"
	case errors.Is(err, workspace.ErrUnsafe):
		return "unsafe"
	}
	return "internal"
}

// asJSON is v as JSON decoded again, numbers as json.Number: what a
// client reads.
func asJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	return out, dec.Decode(&out)
}
