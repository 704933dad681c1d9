package sqlite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/fscheck"
)

// TestLeadStrict: a database on a filesystem SQLite cannot trust is
// refused with fscheck.ErrUnsafe under Strict, before the lock is
// taken, and served with a warning without it; on a local one Strict
// leads.
func TestLeadStrict(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	l, err := s.Lead(ctx, workspace.LeadOptions{Strict: true})
	if err != nil {
		t.Fatalf("strict lead on a local filesystem: %v", err)
	}
	l.Release(ctx)

	checkFilesystem = func(string) (string, bool, error) { return "NFS", true, nil }
	t.Cleanup(func() { checkFilesystem = fscheck.Check })
	_, err = s.Lead(ctx, workspace.LeadOptions{Strict: true})
	if !errors.Is(err, fscheck.ErrUnsafe) || !strings.Contains(err.Error(), "NFS") || !strings.Contains(err.Error(), s.Path()) {
		t.Fatalf("strict lead on NFS: %v", err)
	}
	if serving, _ := s.Serving(); serving {
		t.Error("a refused lead left the daemon's lock held")
	}
	var log bytes.Buffer
	l, err = s.Lead(ctx, workspace.LeadOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("lead on NFS without strict: %v", err)
	}
	defer l.Release(ctx)
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "fs=NFS") {
		t.Errorf("no warning of NFS: %s", log.String())
	}
}
