package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// workerEnv makes the test binary an agent process (see TestMain):
// ROOT ROUNDS CLAIMS.
const workerEnv = "WORKSPACED_SQLITE_WORKER"

func TestMain(m *testing.M) {
	if args := os.Getenv(workerEnv); args != "" {
		if err := worker(strings.Fields(args)); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if migrated.path != "" {
		os.RemoveAll(filepath.Dir(migrated.path))
	}
	os.Exit(code)
}

// worker is one agent process: ROUNDS version-checked increments of the
// counter entry of task t1, then CLAIMS claims, printing each marker's
// name.
func worker(args []string) error {
	ctx := context.Background()
	rounds, _ := strconv.Atoi(args[1])
	claims, _ := strconv.Atoi(args[2])
	s, err := Open(ctx, args[0])
	if err != nil {
		return err
	}
	defer s.Close()
	agent := "agent_" + strconv.Itoa(os.Getpid())
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	for range rounds {
		for {
			e, err := s.GetEntry(ctx, sc, "counter")
			if err != nil {
				return err
			}
			var v int
			if err := json.Unmarshal(e.Value, &v); err != nil {
				return err
			}
			_, err = s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "counter", Value: json.RawMessage(strconv.Itoa(v + 1)), Agent: agent, IfVersion: e.Version})
			if errors.Is(err, workspace.ErrConflict) {
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	for i := range claims {
		name, err := s.WriteClaim(ctx, "t1", agent, "s"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		fmt.Println(name)
	}
	return nil
}

// TestProcesses runs agent processes against one database while the
// daemon serves it: no busy error reaches any of them, no update of the
// counter is lost, and every claim is journaled exactly once.
func TestProcesses(t *testing.T) {
	t.Parallel()
	const procs, rounds, claims = 4, 25, 10
	s, root := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "contention", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "counter", Description: "a counter", Value: json.RawMessage(`0`), Agent: "test"}); err != nil {
		t.Fatal(err)
	}
	servetest.Start(t, s, daemon.Config{})

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		names []string
	)
	for range procs {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", workerEnv, root, rounds, claims))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("agent process: %v: %s", err, stderr.String())
				return
			}
			mu.Lock()
			names = append(names, strings.Fields(string(out))...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	e, err := s.GetEntry(ctx, sc, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := procs * rounds; string(e.Value) != strconv.Itoa(want) || e.Version != want+1 {
		t.Fatalf("counter %s at version %d, want %d at version %d: an update was lost", e.Value, e.Version, want, want+1)
	}
	if len(names) != procs*claims {
		t.Fatalf("%d markers written, want %d", len(names), procs*claims)
	}
	var journal []workspace.JournalRecord
	for deadline := time.Now().Add(30 * time.Second); ; {
		if journal, err = s.ReadJournal(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		if len(journal) >= len(names) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var taken []string
	for i, r := range journal {
		if r.Seq != int64(i+1) {
			t.Fatalf("journal record %d has seq %d", i, r.Seq)
		}
		taken = append(taken, r.File)
	}
	slices.Sort(taken)
	slices.Sort(names)
	if !slices.Equal(taken, names) {
		t.Fatalf("journal holds %d markers %v,\nwant each of the %d written once: %v", len(taken), taken, len(names), names)
	}
}
