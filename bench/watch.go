package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// taskView is the part of a task's state.json the harness reads, as an
// agent waiting for a verdict would.
type taskView struct {
	PlanStatus string `json:"plan_status"`
	Status     string `json:"status"`
	Subtasks   map[string]struct {
		Status string `json:"status"`
	} `json:"subtasks"`
}

// commits records, per task and subtask, the first time a read of the
// task's state.json showed the subtask completed, and the last state read
// of every task. It is safe for concurrent use.
type commits struct {
	mu   sync.Mutex
	cond *sync.Cond
	seen map[string]time.Time // "task/subtask"
	last map[string]taskView  // task
	err  error                // set by abort: waits return it
	// quiet, while set, has the harness's watchers read no state: the
	// verdict rows time a waiter's own reads, which a watcher decoding
	// each whole state on the same cores would slow.
	quiet atomic.Bool
}

func newCommits() *commits {
	c := &commits{seen: map[string]time.Time{}, last: map[string]taskView{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// observe takes a state of task read at time at: every subtask it shows
// completed for the first time is stamped at. A later read never moves a
// stamp (the first sight is when the completion became visible).
func (c *commits) observe(task string, v taskView, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, s := range v.Subtasks {
		if s.Status != "completed" {
			continue
		}
		if _, ok := c.seen[task+"/"+id]; !ok {
			c.seen[task+"/"+id] = at
		}
	}
	c.last[task] = v
	c.cond.Broadcast()
}

// abort makes every wait return err from now on (an agent or the daemon
// exited early: what was to happen never will).
func (c *commits) abort(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.cond.Broadcast()
}

// waitFor blocks until done holds (called with c.mu held), an abort, or
// the deadline; missing names what is still awaited for the error.
func (c *commits) waitFor(deadline time.Time, done func() (ok bool, missing string)) error {
	timer := time.AfterFunc(time.Until(deadline), func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.err != nil {
			return c.err
		}
		ok, missing := done()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s not seen in state.json in time", missing)
		}
		c.cond.Wait()
	}
}

// wait blocks until every key ("task/subtask") is stamped, or the
// deadline passes.
func (c *commits) wait(keys []string, deadline time.Time) error {
	return c.waitFor(deadline, func() (bool, string) {
		for _, k := range keys {
			if _, ok := c.seen[k]; !ok {
				return false, k + " completed"
			}
		}
		return true, ""
	})
}

// waitState blocks until the last state read of task satisfies ok.
func (c *commits) waitState(task, what string, ok func(taskView) bool, deadline time.Time) error {
	return c.waitFor(deadline, func() (bool, string) {
		v, read := c.last[task]
		return read && ok(v), task + " " + what
	})
}

// at is when key was first seen completed (zero if never).
func (c *commits) at(k string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[k]
}

// stateWatcher learns when the daemon's state writes become visible, from
// outside the daemon: it watches task directories with fsnotify, and
// whenever a state.json is replaced it reads it and hands it to commits.
// A stamp is taken once the read returns, so that everything read was
// visible by then: it errs late (by the event's delivery and the read),
// never early. Visible is not yet durable: a state.json is seen once it
// is renamed into place, before the daemon's fsync of the directory.
type stateWatcher struct {
	root string
	cm   *commits
	w    *fsnotify.Watcher
	mu   sync.Mutex
	dirs map[string]string // task directory → task id
	done chan struct{}
}

func newStateWatcher(root string, cm *commits) (*stateWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("bench: watch state writes: %w", err)
	}
	sw := &stateWatcher{root: root, cm: cm, w: w, dirs: map[string]string{}, done: make(chan struct{})}
	go sw.loop()
	return sw, nil
}

// watch adds task's directory, then reads its state once (a write before
// the watch would otherwise go unseen).
func (sw *stateWatcher) watch(task string) error {
	dir := filepath.Join(sw.root, "tasks", task)
	sw.mu.Lock()
	sw.dirs[dir] = task
	sw.mu.Unlock()
	if err := sw.w.Add(dir); err != nil {
		return fmt.Errorf("bench: watch %s: %w", dir, err)
	}
	sw.read(task)
	return nil
}

// loop is the one goroutine taking the watcher's events. Events already
// queued are taken together, so that a state is read once for several of
// them.
func (sw *stateWatcher) loop() {
	defer close(sw.done)
	pending := map[string]bool{}
	for {
		select {
		case ev, ok := <-sw.w.Events:
			if !ok {
				return
			}
			sw.note(pending, ev)
		case _, ok := <-sw.w.Errors:
			if !ok {
				return
			}
			// An overflow or a failure: something may have been missed.
			sw.mu.Lock()
			for _, task := range sw.dirs {
				pending[task] = true
			}
			sw.mu.Unlock()
		}
	drain:
		for {
			select {
			case ev, ok := <-sw.w.Events:
				if !ok {
					return
				}
				sw.note(pending, ev)
			default:
				break drain
			}
		}
		for task := range pending {
			sw.read(task)
			delete(pending, task)
		}
	}
}

// note marks the task of ev pending when ev replaced or wrote state.json.
func (sw *stateWatcher) note(pending map[string]bool, ev fsnotify.Event) {
	if filepath.Base(ev.Name) != "state.json" || !ev.Has(fsnotify.Create|fsnotify.Write) {
		return
	}
	sw.mu.Lock()
	task, ok := sw.dirs[filepath.Dir(ev.Name)]
	sw.mu.Unlock()
	if ok {
		pending[task] = true
	}
}

// read reads task's state.json and hands it to commits, stamped when the
// read returned. A missing or unparsable file is left for the next event
// (state.json is only ever replaced whole, so it is not torn).
func (sw *stateWatcher) read(task string) {
	if sw.cm.quiet.Load() {
		return
	}
	data, err := os.ReadFile(filepath.Join(sw.root, "tasks", task, "state.json"))
	at := time.Now()
	if err != nil {
		return
	}
	var v taskView
	if json.Unmarshal(data, &v) != nil {
		return
	}
	sw.cm.observe(task, v, at)
}

func (sw *stateWatcher) close() {
	sw.w.Close()
	<-sw.done
}
