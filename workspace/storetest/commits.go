package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// Commits checks a CommitSource (what workspace.Wait wakes on): two
// waiters of task each receive once at the start and then after each of
// five commits that commit(i) makes from another store, with no poll of
// the source's own to deliver them. When waiting is not nil (the number
// of waiters the source holds), it must fall to zero once the waiters'
// context ends, and the round runs again: the source starts anew with its
// next waiter.
func Commits(t *testing.T, src workspace.CommitSource, task string, commit func(i int), waiting func() int) {
	t.Helper()
	rounds := 1
	if waiting != nil {
		rounds = 2
	}
	n := 0
	for round := range rounds {
		ctx, cancel := context.WithCancel(t.Context())
		var cs []<-chan struct{}
		for range 2 {
			c, err := src.Commits(ctx, task)
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		for w, c := range cs {
			awaitCommit(t, c, fmt.Sprintf("round %d, waiter %d at the start", round, w))
		}
		for range 5 {
			for _, c := range cs {
				select {
				case <-c: // a value of the watch's first look
				default:
				}
			}
			commit(n)
			for w, c := range cs {
				awaitCommit(t, c, fmt.Sprintf("round %d, waiter %d after commit %d", round, w, n))
			}
			n++
		}
		cancel()
		if waiting != nil {
			poll.Until(t, time.Minute, "no waiter left once their context ended", func() (bool, string) {
				k := waiting()
				return k == 0, fmt.Sprintf("%d left", k)
			})
		}
	}
}

func awaitCommit(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(time.Minute):
		t.Fatalf("%s: no commit heard within a minute", what)
	}
}
