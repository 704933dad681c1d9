package sqlite

import "sync/atomic"

// The daemon's own commits, as its wake-up loop sees them. A write the
// loop hears while the daemon commits is the commit's own, or another
// writer's that finished before the commit took SQLite's write lock
// (visible once the commit ends): either way one read of the data
// version after the commit's end is enough, and none during it (it would
// wait for the commit's connection). The loop asks for that end
// (await), and the commit's end hands it over (end) when asked: a
// commit nobody heard costs the loop nothing.
type ownCommits struct {
	busy atomic.Int32  // commits under way (begun, not yet ended)
	want atomic.Bool   // the loop waits for the end of the commits under way
	done chan struct{} // an end the loop asked for; capacity 1
}

func newOwnCommits() *ownCommits { return &ownCommits{done: make(chan struct{}, 1)} }

// begin is a commit's start, before it waits for the write lock. Begins
// and ends may nest (the committer's around writeSynced's): the commits
// under way end when as many ends as begins have come.
func (o *ownCommits) begin() { o.busy.Add(1) }

// end is a commit's end, once its COMMIT returned (or it failed).
func (o *ownCommits) end() {
	if o.busy.Add(-1) == 0 && o.want.Swap(false) {
		select {
		case o.done <- struct{}{}:
		default:
		}
	}
}

// underWay says whether a commit is under way.
func (o *ownCommits) underWay() bool { return o.busy.Load() > 0 }

// await asks for the end of the commits under way: false when none is
// any longer (the caller goes on at once), true when done will receive.
func (o *ownCommits) await() bool {
	o.want.Store(true)
	if o.busy.Load() == 0 && o.want.Swap(false) {
		return false
	}
	return true
}
