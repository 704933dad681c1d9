package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

func TestEventsOrder(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	for _, id := range []string{"t1", "t2"} {
		if err := s.PutTask(ctx, workspace.Task{ID: id, Description: "events"}); err != nil {
			t.Fatal(err)
		}
	}
	base := now().Truncate(time.Second)
	// t1's events are appended one by one, t2's in one batch whose order
	// is not its times' order: append order is what is kept.
	for i := range 20 {
		if err := s.AppendEvent(ctx, workspace.Event{Time: base.Add(time.Duration(i) * time.Second), Name: "probe", TaskID: "t1", Args: []string{strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	batch := []workspace.Event{
		{Time: base.Add(10500 * time.Millisecond), Name: "probe", Args: []string{"b0"}, Attrs: map[string]string{"k": "v w"}},
		{Time: base.Add(5500 * time.Millisecond), Name: "probe", Args: []string{"b1"}},
		{Time: base.Add(30 * time.Second), Name: "probe", Args: []string{"b2"}},
	}
	if err := s.AppendEvents(ctx, "t2", batch); err != nil {
		t.Fatal(err)
	}
	evs, bad, err := s.ReadEvents(ctx, "t1")
	if err != nil || len(bad) != 0 || len(evs) != 20 {
		t.Fatalf("read t1: %d events, bad %v, %v", len(evs), bad, err)
	}
	for i, e := range evs {
		if e.Args[0] != strconv.Itoa(i) || !e.Time.Equal(base.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("event %d of t1 is %+v", i, e)
		}
	}
	e2, _, err := s.ReadEvents(ctx, "t2")
	if err != nil || len(e2) != 3 || e2[0].Args[0] != "b0" || e2[1].Args[0] != "b1" || e2[2].Args[0] != "b2" || e2[0].Attrs["k"] != "v w" || e2[0].TaskID != "t2" {
		t.Fatalf("t2's batch read back as %+v (%v), want b0 b1 b2 in append order", e2, err)
	}
	// A line another program wrote that does not parse is reported.
	if _, err := s.pool.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ('t2', now(), 'not an event')"); err != nil {
		t.Fatal(err)
	}
	if _, bad, _ := s.ReadEvents(ctx, "t2"); len(bad) != 1 {
		t.Fatalf("a line that does not parse: bad %v, want one", bad)
	}
	// Merged by time; ties in the order of the task list.
	var got []string
	badLines, err := s.MergeEvents(ctx, []string{"t1", "t2"}, func(e workspace.Event) error {
		got = append(got, e.TaskID+":"+e.Args[0])
		return nil
	})
	if err != nil || len(badLines) != 1 || badLines[0].TaskID != "t2" || badLines[0].Count != 1 {
		t.Fatalf("merge: bad %+v, %v", badLines, err)
	}
	want := map[int]string{5: "t1:5", 6: "t2:b1", 7: "t1:6", 11: "t1:10", 12: "t2:b0", 22: "t2:b2"}
	if len(got) != 23 {
		t.Fatalf("merged %d events, want 23: %v", len(got), got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("merged event %d is %s, want %s: %v", i, got[i], w, got)
		}
	}
	stop := errors.New("stop")
	n := 0
	if _, err := s.MergeEvents(ctx, nil, func(workspace.Event) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("an error from each: %v after %d events, want it after 1", err, n)
	}

	if _, _, err := s.ReadEvents(ctx, "t_none"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("events of a missing task: %v, want ErrNotFound", err)
	}
	if err := s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t_none"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("append to a missing task: %v, want ErrNotFound", err)
	}
	if err := s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "'); DROP TABLE events; --"}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("append with a bad task id: %v, want ErrInvalid", err)
	}
}

// follow runs FollowEvents in the background and returns the events it
// delivers; the interval is an hour, so only a notification wakes it.
func follow(t *testing.T, s *Store, task string, fromStart bool) <-chan workspace.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan workspace.Event, 100)
	done := make(chan error, 1)
	go func() {
		done <- s.FollowEvents(ctx, task, fromStart, time.Hour, func(e workspace.Event) {
			select {
			case got <- e:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("follow ended with %v", err)
		}
	})
	return got
}

// next waits for the next event a follower delivers.
func next(t *testing.T, got <-chan workspace.Event) workspace.Event {
	t.Helper()
	select {
	case e := <-got:
		return e
	case <-time.After(time.Minute):
		t.Fatal("no event followed within a minute")
	}
	panic("unreachable")
}

func TestFollowSeesAppendsAndTheDaemonsCommits(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	epoch := lead(t, s, "daemon")
	plannedTask(t, s, "t1", 1, epoch)
	if err := s.PutTask(ctx, workspace.Task{ID: "t2", Description: "other"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := s.ReadEvents(ctx, "t1")
	if err != nil || len(old) == 0 {
		t.Fatalf("the planned task has no events: %v", err)
	}
	all := follow(t, s, "", true)
	for i := range old {
		if e := next(t, all); e.Name != old[i].Name {
			t.Fatalf("replayed event %d is %s, want %s", i, e.Name, old[i].Name)
		}
	}
	one := follow(t, s, "t1", false)
	// The follower from the end may start after an append: append until
	// it sees one (the hour-long interval means a notification woke it).
	var first int
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		if time.Now().After(deadline) {
			t.Fatal("no appended event reached the follower within a minute: no notification woke it")
		}
		if err := s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1", Args: []string{strconv.Itoa(i)}}); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-one:
			first, _ = strconv.Atoi(e.Args[0])
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	// Events of another task do not reach the follower of t1; the
	// daemon's commit does, in order, after the probes.
	if err := s.AppendEvent(ctx, workspace.Event{Name: "elsewhere", TaskID: "t2"}); err != nil {
		t.Fatal(err)
	}
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "worker", SubtaskID: "s0"})
	a, err := commitOnce(ctx, s, "t1", epoch)
	if err != nil || len(a.Events) == 0 {
		t.Fatalf("commit of a claim: %+v, %v", a, err)
	}
	// Probes appended while the follower was slow to hear the first come
	// before the commit's events, each once and in order.
	last := first
	for _, want := range a.Events {
		e := next(t, one)
		for e.Name == "probe" {
			n, _ := strconv.Atoi(e.Args[0])
			if n <= last {
				t.Fatalf("probe %d delivered again or out of order (after %d)", n, last)
			}
			last = n
			e = next(t, one)
		}
		if e.Name != want.Name || e.TaskID != "t1" {
			t.Fatalf("followed %+v, want the commit's %s", e, want.Name)
		}
	}
	// The follower of every task sees them all, the other task's too.
	seen := map[string]bool{}
	for !seen["elsewhere"] || !seen[a.Events[len(a.Events)-1].Name] {
		seen[next(t, all).Name] = true
	}
}

// Two transactions on two connections: the first draws an event id and
// stays open, the second appends and commits meanwhile, without waiting.
// No reader reads past the open one: reading on from a position, and
// following, deliver both once the first commits, in order, exactly once.
func TestEventsFromAPositionSkipNothing(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: "t1", Description: "late"}); err != nil {
		t.Fatal(err)
	}
	got := follow(t, s, "t1", false)
	// The follower takes its start position (the newest id) in its own
	// goroutine: append probes until one reaches it, so its position
	// is taken before the transactions below begin.
	deadline := time.Now().Add(time.Minute)
	for delivered := false; !delivered; {
		if time.Now().After(deadline) {
			t.Fatal("no probe reached the follower within a minute: it took no start position")
		}
		if err := s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "t1"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			delivered = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	var read []string
	collect := func(e workspace.PositionedEvent) {
		// Probes held back by other tests' transactions come when they may.
		if e.Name != "probe" {
			read = append(read, e.Name)
		}
	}
	pos, err := s.ReadEventsFrom(ctx, "t1", 0, collect)
	if err != nil {
		t.Fatal(err)
	}
	read = nil

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO events (task_id, time, line) VALUES ('t1', now(), $1)",
		workspace.FormatEvent(workspace.Event{Time: now(), Name: "first", TaskID: "t1"})); err != nil {
		t.Fatal(err)
	}
	// The second commits while the first is still open: its id is above
	// the first's, yet the first must not be skipped.
	if err := s.AppendEvent(ctx, workspace.Event{Name: "second", TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	// Read while the first is still open: nothing yet, the second
	// waits for the older transaction to end.
	if pos, err = s.ReadEventsFrom(ctx, "t1", pos, collect); err != nil {
		t.Fatal(err)
	}
	if len(read) != 0 {
		t.Fatalf("read %q while an older transaction was open, want nothing yet", read)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Once the transactions older than theirs have ended (other tests
	// run beside this one on the cluster), both, in order.
	poll.Until(t, time.Minute, "the two events readable", func() (bool, string) {
		next, err := s.ReadEventsFrom(ctx, "t1", pos, collect)
		if err != nil {
			t.Fatal(err)
		}
		pos = next
		return len(read) >= 2, fmt.Sprint(read)
	})
	if strings.Join(read, " ") != "first second" {
		t.Errorf("read on from positions: %q, want first second", read)
	}
	if err := s.AppendEvent(ctx, workspace.Event{Name: "third", TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	// The probes the follower has not delivered yet come first; any
	// after them is out of order and fails the comparison.
	var followed []string
	for len(followed) == 0 || followed[len(followed)-1] != "third" {
		if e := next(t, got); e.Name != "probe" || len(followed) > 0 {
			followed = append(followed, e.Name)
		}
	}
	if strings.Join(followed, " ") != "first second third" {
		t.Errorf("followed %q, want first second third", followed)
	}
}
