package sqlite

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Writers on this machine queue for SQLite's one write lock in the
// kernel, by an exclusive flock of <db>.write taken before BEGIN
// IMMEDIATE and given up after COMMIT: the kernel hands it to the next
// waiter the moment it is released. SQLite's own busy handler polls
// instead, sleeping 1, 2, 5 … 100 ms between tries, and with a few dozen
// writers at once most of them sleep through the moments the lock is
// free (32 agents inserting one row each took over a second). A process
// that does not take the flock (an agent in another language) still
// writes safely: it meets SQLite's lock and its busy timeout as before.

// writeQueue is one Store's place in the machine's queue of writers:
// one writer of the process at a time (sem), then the flock, on a file
// opened at the first write and kept open.
type writeQueue struct {
	sem  chan struct{}
	path string
	f    *os.File // guarded by sem
}

func newWriteQueue(path string) *writeQueue {
	return &writeQueue{sem: make(chan struct{}, 1), path: path + ".write"}
}

// lock waits for this process's turn, then the machine's, until ctx ends.
func (q *writeQueue) lock(ctx context.Context) error {
	select {
	case q.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if q.f == nil {
		f, err := os.OpenFile(q.path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			<-q.sem
			return fmt.Errorf("open the write queue %s: %w", q.path, err)
		}
		q.f = f
	}
	fd := int(q.f.Fd())
	if flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		return nil // free: no wait to bound
	}
	got := make(chan error, 1)
	go func() { got <- flock(fd, unix.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			<-q.sem
			return fmt.Errorf("queue for the write lock %s: %w", q.path, err)
		}
		return nil
	case <-ctx.Done():
		// The flock is given up as soon as it comes.
		go func() {
			if <-got == nil {
				_ = flock(fd, unix.LOCK_UN)
			}
			<-q.sem
		}()
		return ctx.Err()
	}
}

// unlock hands the turn on.
func (q *writeQueue) unlock() {
	_ = flock(int(q.f.Fd()), unix.LOCK_UN)
	<-q.sem
}

// close closes the file (which gives up its flock). A wait a context
// ended may still hold the turn: it then ends with the file.
func (q *writeQueue) close() error {
	select {
	case q.sem <- struct{}{}:
		defer func() { <-q.sem }()
	default:
	}
	if q.f == nil {
		return nil
	}
	return q.f.Close()
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// syncWAL makes every commit written to the write-ahead log so far
// durable: an fsync of <db>-wal, as synchronous=FULL does under the write
// lock. Without the file, nothing is waiting in it: the last connection
// to close checkpointed it into the database (and synced that) first.
func syncWAL(path string) error {
	f, err := os.Open(path + "-wal")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the write-ahead log: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync the write-ahead log: %w", err)
	}
	return nil
}
