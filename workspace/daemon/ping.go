package daemon

import (
	"context"
	"fmt"
)

// Ping reports whether the daemon's loop answers: nil when it took the
// ping within ctx, or when no loop runs (the daemon waits to lead, or has
// stopped). A loop stuck (a commit that never returns does not stop it;
// a loop goroutine blocked does) fails it once ctx ends: systemd's
// watchdog is fed only while Ping succeeds. Safe for concurrent use.
func (d *Daemon) Ping(ctx context.Context) error {
	if !d.looping.Load() {
		return nil
	}
	ack := make(chan struct{})
	select {
	case d.pings <- ack:
	case <-ctx.Done():
		return fmt.Errorf("the daemon's loop does not answer: %w", context.Cause(ctx))
	}
	<-ack // the loop closes it at once
	return nil
}

// answer closes a ping's acknowledgement: the loop is alive.
func answer(ack chan struct{}) { close(ack) }
