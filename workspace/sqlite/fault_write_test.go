package sqlite

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestFaultFullAgentWrite: an agent's write SQLite refuses as full carries
// ENOSPC, so the error names the disk and has the hint to free space. The
// database is kept from growing by max_page_count, as a full disk would.
func TestFaultFullAgentWrite(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d", SubmittedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	big, _ := json.Marshal(strings.Repeat("x", 256<<10))
	_, err := s.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"},
		workspace.StoreRequest{Key: "big", Description: "d", Value: big, Agent: "w1"})
	if !errors.Is(err, syscall.ENOSPC) || workspace.FaultKind(err) != workspace.FaultDiskFull || workspace.FaultHint(err) == "" {
		t.Fatalf("store on a full database: %v (kind %q), want ENOSPC with the full-disk hint", err, workspace.FaultKind(err))
	}
	if !strings.Contains(err.Error(), "database or disk is full (13): no space left on device") {
		t.Errorf("the error does not say what is full: %v", err)
	}
}
