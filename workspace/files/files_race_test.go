package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// A reader racing atomic replacements of the same entry must always see a
// whole entry: never a false "is a symlink", never a torn file.
func TestGetWhileReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, err := Init(t.TempDir(), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "race"}); err != nil {
		t.Fatal(err)
	}
	s := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	store := func(i int) error {
		_, err := w.StoreEntry(ctx, s, workspace.StoreRequest{Key: "k", Description: "d", Value: json.RawMessage(fmt.Sprint(i)), Agent: "a"})
		return err
	}
	if err := store(0); err != nil {
		t.Fatal(err)
	}
	const writes = 150
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				if err := store(i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	reads := 0
	for {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no read overlapped the writes")
			}
			return
		default:
		}
		if _, err := w.GetEntry(ctx, s, "k"); err != nil {
			if errors.Is(err, workspace.ErrUnsafe) {
				t.Fatalf("read %d: a regular file replaced by rename was called unsafe: %v", reads, err)
			}
			t.Fatalf("read %d: %v", reads, err)
		}
		reads++
	}
}
