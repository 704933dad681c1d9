package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestReportFaultHint: the one error printer adds the machine's hint to
// whatever hint the error carries, and keeps the exit code of the error's
// kind.
func TestReportFaultHint(t *testing.T) {
	t.Parallel()
	enospc := &fs.PathError{Op: "write", Path: "tasks/t1/env/.k.json123", Err: syscall.ENOSPC}
	tests := []struct {
		name  string
		err   error
		code  int
		hints []string
	}{
		{"full disk", fmt.Errorf("write k.json: %w", enospc), exitFailure, []string{"the filesystem is full"}},
		{"read-only", &fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, exitFailure, []string{"remount it read-write"}},
		{"permissions", fmt.Errorf("open workspace: %w", &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}), exitFailure, []string{"permission denied"}},
		{"open files", &fs.PathError{Op: "open", Path: "x", Err: syscall.EMFILE}, exitFailure, []string{"raise the open-files limit"}},
		{"own hint first, then the machine's", &workspace.Error{Kind: workspace.ErrLocked, Op: "lock x", Err: enospc, Hint: "retry later"},
			exitConflict, []string{"retry later", "the filesystem is full"}},
		{"no fault", &workspace.Error{Kind: workspace.ErrNotFound, Op: "task t9", Msg: "no such task", Hint: "list the tasks"},
			exitNotFound, []string{"list the tasks"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := report(&stderr, tc.err); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != 1+len(tc.hints) || !strings.HasPrefix(lines[0], "workspaced: ") {
				t.Fatalf("stderr = %q, want the error and %d hint line(s)", stderr.String(), len(tc.hints))
			}
			for i, h := range tc.hints {
				if !strings.HasPrefix(lines[1+i], "hint: ") || !strings.Contains(lines[1+i], h) {
					t.Errorf("line %d = %q, want a hint saying %q", 1+i, lines[1+i], h)
				}
			}
		})
	}
}
