package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
)

// The collector of a long-running process (the daemon, an MCP server):
// its heap may grow further between collections than Go's default, and a
// soft memory limit, set once the process has opened what it keeps,
// bounds it. GOGC or GOMEMLIMIT in the environment win.

// tuneGC sets the collector's target to percent, unless GOGC says how.
// It sets no memory limit: fitMemoryLimit does once the process is ready.
func tuneGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// memLimitFor is the soft memory limit of a process whose live heap,
// once it is ready, is live bytes: floor, or twice the live heap when
// that is more. Under a limit below the live heap (a tree of many
// thousands of tasks) the collector would run over and over even while
// the process is idle.
func memLimitFor(floor int64, live uint64) int64 {
	return max(floor, 2*int64(live))
}

// fitMemoryLimit sets the soft memory limit to memLimitFor(floor) of the
// live heap, unless GOMEMLIMIT is set, and returns the start-up's garbage
// to the system at once (one collection): left to the background
// scavenger, the daemon's RSS stayed at its start-up scan's peak (130 MiB
// at 20,000 tasks) for half a minute.
func fitMemoryLimit(floor int64) {
	defer debug.FreeOSMemory()
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	debug.SetMemoryLimit(memLimitFor(floor, sample[0].Value.Uint64()))
}
