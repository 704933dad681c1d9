package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestFaultHint classifies errors by the errno in their chain, however it
// is wrapped, and gives one hint per fault; anything else gets none.
func TestFaultHint(t *testing.T) {
	const (
		space = "free space"
		ro    = "remount it read-write"
		perm  = "permission denied"
		files = "raise the open-files limit"
	)
	path := func(errno error) error { return &fs.PathError{Op: "open", Path: "tasks/t1/env/.k.json123", Err: errno} }
	tests := []struct {
		name string
		err  error
		want string // a phrase of the hint, or "" for none
	}{
		{"nil", nil, ""},
		{"plain error", errors.New("no space left on device"), ""},
		{"other errno", path(syscall.ENOENT), ""},
		{"not found sentinel", fs.ErrNotExist, ""},
		{"permission sentinel without an errno", fs.ErrPermission, ""},
		{"workspace error without cause", &Error{Kind: ErrInvalid, Op: "store", Msg: "bad"}, ""},

		{"bare ENOSPC", syscall.ENOSPC, space},
		{"ENOSPC in a PathError", path(syscall.ENOSPC), space},
		{"EDQUOT in a PathError", path(syscall.EDQUOT), space},
		{"ENOSPC in a LinkError", &os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.ENOSPC}, space},
		{"ENOSPC in a SyscallError", os.NewSyscallError("fsync", syscall.ENOSPC), space},
		{"ENOSPC wrapped twice with %w", fmt.Errorf("store env k: %w", fmt.Errorf("replace k.json: %w", path(syscall.ENOSPC))), space},
		{"ENOSPC as a workspace error's cause", &Error{Kind: ErrInvalid, Op: "write", Err: path(syscall.ENOSPC)}, space},
		{"ENOSPC in a join", errors.Join(errors.New("first"), path(syscall.ENOSPC)), space},

		{"EROFS in a PathError", path(syscall.EROFS), ro},
		{"EROFS in a LinkError", &os.LinkError{Op: "link", Old: "a", New: "b", Err: syscall.EROFS}, ro},
		{"EROFS wrapped", fmt.Errorf("acquire lock x: %w", path(syscall.EROFS)), ro},

		{"EACCES in a PathError", path(syscall.EACCES), perm},
		{"EPERM in a LinkError", &os.LinkError{Op: "link", Old: "a", New: "b", Err: syscall.EPERM}, perm},
		{"EACCES wrapped", fmt.Errorf("open workspace: %w", path(syscall.EACCES)), perm},

		{"EMFILE in a PathError", path(syscall.EMFILE), files},
		{"ENFILE in a SyscallError", os.NewSyscallError("openat", syscall.ENFILE), files},
		{"EMFILE wrapped", fmt.Errorf("list tasks: %w", path(syscall.EMFILE)), files},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FaultHint(tc.err)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("FaultHint = %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("FaultHint = %q, want it to say %q", got, tc.want)
			}
			if strings.Contains(got, "--") {
				t.Errorf("FaultHint = %q names a flag; hints speak of the machine", got)
			}
		})
	}
}

// TestFaultHintFirstFaultWins: an error joining two faults gets the hint of
// the one the table names first, always the same.
func TestFaultHintFirstFaultWins(t *testing.T) {
	err := errors.Join(syscall.EMFILE, syscall.ENOSPC)
	if got := FaultHint(err); !strings.Contains(got, "free space") {
		t.Fatalf("FaultHint = %q, want the full-disk hint", got)
	}
}
