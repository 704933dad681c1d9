package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/workspaced/workspaced/internal/opsmetrics"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// systemd's notify protocol (Type=notify): serve says READY=1 once it
// leads after its start-up scan, or waits as a standby; STATUS= whenever
// its state in one line changes (leading epoch N, standby, degraded: task
// T stopped); WATCHDOG=1 every half WatchdogSec while its loop answers a
// ping; STOPPING=1 when it begins to stop. Without NOTIFY_SOCKET every
// notification is a no-op.

// statusEvery is how often the one-line state is looked at, to be said
// when it changed.
const statusEvery = time.Second

// notifier speaks the notify protocol for one serve.
type notifier struct {
	m   *opsmetrics.Daemon
	d   *daemon.Daemon
	log *slog.Logger

	mu   sync.Mutex
	said string // the STATUS= last sent
	wg   sync.WaitGroup
}

// send sends state, logging a failure at debug level (systemd gone is no
// reason to stop serving).
func (n *notifier) send(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.log.Debug("notify systemd", "state", state, "err", err)
	}
}

// ready says READY=1 with the state: the daemon leads after its scan, or
// waits as a standby.
func (n *notifier) ready() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.said = n.m.Status()
	n.send("READY=1\nSTATUS=" + n.said)
}

// status says the state when it changed.
func (n *notifier) status() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s := n.m.Status(); s != n.said {
		n.said = s
		n.send("STATUS=" + s)
	}
}

// run keeps STATUS= current and feeds the watchdog until ctx is done,
// then says STOPPING=1. wait waits for it.
func (n *notifier) run(ctx context.Context) {
	every, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warn("systemd watchdog", "err", err)
	}
	n.wg.Go(func() {
		tick := time.NewTicker(statusEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				n.send("STOPPING=1")
				return
			case <-tick.C:
				n.status()
			}
		}
	})
	if every <= 0 {
		return
	}
	n.wg.Go(func() {
		tick := time.NewTicker(every / 2)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pctx, cancel := context.WithTimeout(ctx, every/2)
			err := n.d.Ping(pctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					n.log.Error("systemd watchdog not fed", "err", err)
				}
				continue
			}
			n.send("WATCHDOG=1")
		}
	})
}

func (n *notifier) wait() { n.wg.Wait() }
