package daemon

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// wakeups is a wake-up source that cannot follow the tasks it is told to
// refuse, as inotify refuses past its watch limit or for a directory
// removed meanwhile.
type wakeups struct{ refuse map[string]error }

func (w wakeups) C() <-chan workspace.Wake { return nil }
func (w wakeups) Follow(id string) error   { return w.refuse[id] }
func (w wakeups) Unfollow(string)          {}
func (w wakeups) Mode() string             { return "test" }
func (w wakeups) Held() int                { return 0 }
func (w wakeups) Close() error             { return nil }

// A task whose follow fails for want of watches is counted and said once
// with the store's hint; one removed meanwhile (cleanup) is neither
// counted nor given the hint: its next commit finds it gone.
func TestFollowCountsOnlyWatchesThatFailed(t *testing.T) {
	var logs bytes.Buffer
	limit := &workspace.Error{Kind: workspace.ErrLocked, Op: "watch task full", Err: errors.New("no space left on device"),
		Hint: "raise the inotify watch limit"}
	gone := &workspace.Error{Kind: workspace.ErrNotFound, Op: "watch task gone", Msg: "no task directory"}
	d := &Daemon{log: slog.New(slog.NewTextHandler(&logs, nil))}
	l := &loop{d: d, wk: wakeups{refuse: map[string]error{"full": limit, "gone": gone}}, tasks: map[string]*owner{}}
	for _, id := range []string{"ok", "full", "gone"} {
		l.follow(&owner{id: id})
	}
	if l.unwatched != 1 {
		t.Fatalf("%d tasks counted unwatched, want 1 (only the one past the watch limit)", l.unwatched)
	}
	l.sayUnwatched()
	out := logs.String()
	if strings.Count(out, "raise the inotify watch limit") != 1 || !strings.Contains(out, "count=1") {
		t.Fatalf("log = %q, want the hint once with count=1", out)
	}
	logs.Reset()
	l.sayUnwatched()
	if logs.Len() != 0 {
		t.Fatalf("said again with nothing changed: %q", logs.String())
	}
}
