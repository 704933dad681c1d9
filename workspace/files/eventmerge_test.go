package files

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// logTree makes tasks/<id>/ for each id with the given events.log content
// (nil: no events.log) and returns the workspace.
func logTree(t *testing.T, logs map[string]*string) *Store {
	t.Helper()
	w, _ := newWS(t)
	for id, content := range logs {
		dir := filepath.Join(w.Dir(), "tasks", id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != nil {
			if err := os.WriteFile(filepath.Join(dir, workspace.EventsFile), []byte(*content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

func str(s string) *string { return &s }

// merged runs MergeEvents and returns the events as events.log lines and
// the bad-line counts by task.
func merged(t *testing.T, w *Store, ids []string) ([]string, map[string]workspace.BadLines) {
	t.Helper()
	var got []string
	bad, err := w.MergeEvents(context.Background(), ids, func(e workspace.Event) error {
		got = append(got, workspace.FormatEvent(e))
		return nil
	})
	if err != nil {
		t.Fatalf("MergeEvents: %v", err)
	}
	byTask := map[string]workspace.BadLines{}
	for _, b := range bad {
		byTask[b.TaskID] = b
	}
	return got, byTask
}

// reference is what `events` printed before it streamed: every task's
// parsable events, tasks in order, sorted stably by time.
func reference(t *testing.T, w *Store, ids []string) []string {
	t.Helper()
	var all []workspace.Event
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(w.Dir(), "tasks", id, workspace.EventsFile))
		if err != nil {
			continue
		}
		_, err = scanEvents(strings.NewReader(string(data)), func(e workspace.Event) { all = append(all, e) }, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = workspace.FormatEvent(e)
	}
	return out
}

func TestMergeEvents(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", workspace.MaxEventLine+10)
	tests := []struct {
		name string
		logs map[string]*string
		want []string
		bad  map[string]int // task → lines skipped
		// longLine: the case holds a line longer than MaxEventLine,
		// which a whole-file read would have taken in.
		longLine bool
	}{
		{"interleaved", map[string]*string{
			"t1": str("2024-01-15T10:00:01.000Z a t1\n2024-01-15T10:00:03.000Z c t1\n"),
			"t2": str("2024-01-15T10:00:02.000Z b t2\n2024-01-15T10:00:04.000Z d t2\n"),
		}, []string{"2024-01-15T10:00:01.000Z a t1", "2024-01-15T10:00:02.000Z b t2", "2024-01-15T10:00:03.000Z c t1", "2024-01-15T10:00:04.000Z d t2"}, nil, false},
		{"ties: tasks in order, then each log's order", map[string]*string{
			"t2": str("2024-01-15T10:00:01.000Z x t2\n2024-01-15T10:00:01.000Z y t2\n"),
			"t1": str("2024-01-15T10:00:01.000Z z t1\n2024-01-15T10:00:01.000Z a t1\n"),
		}, []string{"2024-01-15T10:00:01.000Z z t1", "2024-01-15T10:00:01.000Z a t1", "2024-01-15T10:00:01.000Z x t2", "2024-01-15T10:00:01.000Z y t2"}, nil, false},
		{"times in other offsets compare as instants", map[string]*string{
			"t1": str("2024-01-15T12:00:00+02:00 a t1\n"),
			"t2": str("2024-01-15T09:59:59Z b t2\n"),
		}, []string{"2024-01-15T09:59:59.000Z b t2", "2024-01-15T10:00:00.000Z a t1"}, nil, false},
		{"empty, missing and blank", map[string]*string{
			"t1": str(""),
			"t2": nil,
			"t3": str("\n\r\n2024-01-15T10:00:00.000Z a t3\r\n\n"),
		}, []string{"2024-01-15T10:00:00.000Z a t3"}, nil, false},
		{"partial last line left for later", map[string]*string{
			"t1": str("2024-01-15T10:00:00.000Z a t1\n2024-01-15T10:00:01.000Z b t1 half"),
		}, []string{"2024-01-15T10:00:00.000Z a t1"}, nil, false},
		{"broken lines skipped and counted", map[string]*string{
			"t1": str("garbage\n2024-01-15T10:00:00.000Z a t1\nnot-a-time ev t1\n2024-01-15T10:00:02.000Z b\n" +
				"2024-01-15T10:00:03.000Z \"unterminated t1\nk=v ev t1\n2024-01-15T10:00:04.000Z c t1\n"),
		}, []string{"2024-01-15T10:00:00.000Z a t1", "2024-01-15T10:00:04.000Z c t1"}, map[string]int{"t1": 5}, false},
		{"a huge line is skipped, not held", map[string]*string{
			"t1": str("2024-01-15T10:00:00.000Z a t1\n2024-01-15T10:00:01.000Z big t1 " + huge + "\n2024-01-15T10:00:02.000Z c t1\n"),
		}, []string{"2024-01-15T10:00:00.000Z a t1", "2024-01-15T10:00:02.000Z c t1"}, map[string]int{"t1": 1}, true},
		{"quoted and hostile words", map[string]*string{
			"t1": str(`2024-01-15T10:00:00.000Z ev t1 "\x1b[2J" "\xff" key="a b" "=x"=1` + "\n" +
				`"2024-01-15T10:00:01Z" quoted t1` + "\n"),
		}, []string{`2024-01-15T10:00:00.000Z ev t1 "\x1b[2J" "\xff" "=x"=1 key="a b"`, "2024-01-15T10:00:01.000Z quoted t1"}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := logTree(t, tc.logs)
			got, bad := merged(t, w, nil)
			if !reflect.DeepEqual(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("merged:\n%s\nwant:\n%s", shortLines(got), shortLines(tc.want))
			}
			ids, _ := w.TaskIDs(t.Context())
			if ref := reference(t, w, ids); !tc.longLine && !reflect.DeepEqual(got, ref) && !(len(got) == 0 && len(ref) == 0) {
				t.Fatalf("merged differs from a stable sort of every event:\n%s\nsort:\n%s", shortLines(got), shortLines(ref))
			}
			for id, n := range tc.bad {
				if bad[id].Count != n || bad[id].First == nil {
					t.Errorf("task %s: %d bad lines (first %v), want %d", id, bad[id].Count, bad[id].First, n)
				}
			}
			if len(bad) != len(tc.bad) {
				t.Errorf("bad lines reported for %v, want %v", bad, tc.bad)
			}
		})
	}
}

// TestMergeEventsManyStreams: more logs than are kept open, interleaved
// event by event, with ties, merge exactly as a stable sort of every
// event would order them; so does a random tree.
func TestMergeEventsManyStreams(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	line := func(at time.Time, id string, k int) string {
		return workspace.FormatEvent(workspace.Event{Time: at, Name: "ev", TaskID: id, Args: []string{fmt.Sprint(k)}}) + "\n"
	}
	t.Run("round robin", func(t *testing.T) {
		n := 3 * maxOpenLogs
		logs := map[string]*string{}
		for i := range n {
			var b strings.Builder
			for k := range 5 {
				b.WriteString(line(t0.Add(time.Duration(k*n+i/2)*time.Millisecond), fmt.Sprintf("t%04d", i), k))
			}
			logs[fmt.Sprintf("t%04d", i)] = str(b.String())
		}
		w := logTree(t, logs)
		got, _ := merged(t, w, nil)
		ids, _ := w.TaskIDs(t.Context())
		if want := reference(t, w, ids); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d events merged, %d by sort; first differences at %d", len(got), len(want), firstDiff(got, want))
		}
		if len(got) != 5*n {
			t.Fatalf("%d events, want %d", len(got), 5*n)
		}
	})
	t.Run("random", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		logs := map[string]*string{}
		for i := range 300 {
			id := fmt.Sprintf("r%03d", i)
			at := t0.Add(time.Duration(r.IntN(1000)) * time.Second)
			var b strings.Builder
			for k := range r.IntN(12) {
				at = at.Add(time.Duration(r.IntN(3)) * time.Second) // ties within and across logs
				b.WriteString(line(at, id, k))
			}
			logs[id] = str(b.String())
		}
		w := logTree(t, logs)
		got, _ := merged(t, w, nil)
		ids, _ := w.TaskIDs(t.Context())
		if want := reference(t, w, ids); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d events merged, %d by sort; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	})
}

// shortLines joins lines for a failure message, each cut to 200 bytes.
func shortLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) > 200 {
			l = l[:200] + fmt.Sprintf("… (%d bytes)", len(l))
		}
		out[i] = l
	}
	return strings.Join(out, "\n")
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestMergeEventsUnsafeLogs: an events.log that is a symlink, a FIFO or a
// directory is reported unread — never followed, never waited on — and
// the other logs are merged.
func TestMergeEventsUnsafeLogs(t *testing.T) {
	t.Parallel()
	w := logTree(t, map[string]*string{
		"t1": str("2024-01-15T10:00:00.000Z a t1\n"),
		"t2": nil, "t3": nil, "t4": nil, "t5": nil,
	})
	tasks := filepath.Join(w.Dir(), "tasks")
	for _, step := range []func() error{
		func() error { return os.Symlink("../t1/events.log", filepath.Join(tasks, "t2", workspace.EventsFile)) },
		func() error { return syscall.Mkfifo(filepath.Join(tasks, "t3", workspace.EventsFile), 0o644) },
		func() error { return os.Mkdir(filepath.Join(tasks, "t4", workspace.EventsFile), 0o755) },
		func() error { return os.Symlink("/etc/passwd", filepath.Join(tasks, "t5", workspace.EventsFile)) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	got, bad := merged(t, w, nil)
	if want := []string{"2024-01-15T10:00:00.000Z a t1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("merged %q, want %q", got, want)
	}
	for _, id := range []string{"t2", "t3", "t4", "t5"} {
		if !errors.Is(bad[id].Unread, workspace.ErrUnsafe) {
			t.Errorf("task %s: unread = %v, want ErrUnsafe", id, bad[id].Unread)
		}
	}
	// Appending to them is refused the same way, without blocking.
	for _, id := range []string{"t2", "t3", "t5"} {
		if err := w.AppendEvent(t.Context(), workspace.Event{Name: "x", TaskID: id}); !errors.Is(err, workspace.ErrUnsafe) {
			t.Errorf("AppendEvent to %s: %v, want ErrUnsafe", id, err)
		}
	}
	if err := w.AppendEvent(t.Context(), workspace.Event{Name: "x", TaskID: "t4"}); err == nil {
		t.Errorf("AppendEvent to a directory: no error")
	}
	if data, _ := os.ReadFile(filepath.Join(tasks, "t1", workspace.EventsFile)); strings.Count(string(data), "\n") != 1 {
		t.Fatalf("t1's log was written through a link:\n%s", data)
	}
}

// TestMergeEventsStops: an error from each stops the merge and comes back;
// so does a cancelled context.
func TestMergeEventsStops(t *testing.T) {
	t.Parallel()
	w := logTree(t, map[string]*string{
		"t1": str("2024-01-15T10:00:00.000Z a t1\n2024-01-15T10:00:02.000Z b t1\n"),
		"t2": str("2024-01-15T10:00:01.000Z c t2\n"),
	})
	stop := errors.New("stop")
	n := 0
	_, err := w.MergeEvents(context.Background(), nil, func(workspace.Event) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Fatalf("err = %v after %d events, want stop after 2", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.MergeEvents(ctx, nil, func(workspace.Event) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
	// One task only.
	got, _ := merged(t, w, []string{"t2"})
	if want := []string{"2024-01-15T10:00:01.000Z c t2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("t2 alone: %q", got)
	}
}

// TestFollowAndReadEventsUnsafeLogs: following every task passes over a
// log that is a FIFO or a symlink instead of blocking on it or reading
// through it; reading one task's such log is refused.
func TestFollowAndReadEventsUnsafeLogs(t *testing.T) {
	t.Parallel()
	w := logTree(t, map[string]*string{
		"t1": str("2024-01-15T10:00:00.000Z a t1\n"),
		"t2": nil, "t3": nil,
	})
	tasks := filepath.Join(w.Dir(), "tasks")
	if err := syscall.Mkfifo(filepath.Join(tasks, "t2", workspace.EventsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../t1/events.log", filepath.Join(tasks, "t3", workspace.EventsFile)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	err := w.FollowEvents(ctx, "", true, time.Millisecond, func(e workspace.Event) {
		got = append(got, workspace.FormatEvent(e))
		cancel() // the first pass is done by the next poll
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2024-01-15T10:00:00.000Z a t1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
	for _, id := range []string{"t2", "t3"} {
		if _, _, err := w.ReadEvents(ctx, id); !errors.Is(err, workspace.ErrUnsafe) {
			t.Errorf("ReadEvents(%s) = %v, want ErrUnsafe", id, err)
		}
	}
}
