package bench

import (
	"context"
	"errors"
	"path/filepath"
	"time"
)

// runFiles runs the workload on files in base into rep: the floor, env,
// the state watcher, the daemon's rows and the idle daemon.
func runFiles(ctx context.Context, opt Options, base string, rep *Report) error {
	n := 200
	if opt.Quick {
		n = 40
	}

	opt.say("floor: durable write of 1 KiB ×%d", n)
	floor, err := measureFloor(base, n)
	if err != nil {
		return err
	}
	rep.Floor = floor

	opt.say("env store/get/update/list")
	envRes, err := measureEnv(ctx, filepath.Join(base, "env"), n)
	if err != nil {
		return err
	}
	for _, r := range envRes {
		r.VsFloor = vsFloor(r, floor, latencyRatio)
		rep.Results = append(rep.Results, r)
	}

	python := ""
	if !opt.NoPython {
		if python = findPython(); python == "" {
			rep.Notes = append(rep.Notes, "python3 is not on PATH: the Python agents' rows were skipped")
		}
	}
	rep.Python = python

	opt.say("state watcher: how soon the harness sees a state write")
	watch, err := measureWatch(filepath.Join(base, "watch"), n/2)
	if err != nil {
		return err
	}
	watch.VsFloor = vsFloor(watch, floor, latencyRatio)
	watch.Note = "included in every daemon latency below"
	rep.Results = append(rep.Results, watch)

	opt.say("daemon: markers from 1, 8 and 32 Go agent processes")
	fl, err := newFloorer(filepath.Join(base, "floor-daemon"))
	if err != nil {
		return err
	}
	defer fl.close()
	dres, err := measureDaemon(ctx, filepath.Join(base, "daemon"), opt, fl, python)
	if err != nil {
		return err
	}
	rep.Results = append(rep.Results, judgeDaemonRows(dres, floor, "one durable write")...)

	tasks, secs := 10000, 5.0
	if opt.Quick {
		tasks, secs = 1000, 2
		rep.Notes = append(rep.Notes, "quick: idle and RSS measured with 1,000 tasks, not 10,000")
	}
	opt.say("daemon idle with %d tasks", tasks)
	cpu, rss, err := measureIdle(ctx, filepath.Join(base, "idle"), tasks, time.Duration(secs*float64(time.Second)), opt)
	switch {
	case errors.Is(err, errNoProc):
		rep.Notes = append(rep.Notes, "daemon idle CPU and RSS not measured: "+err.Error())
	case err != nil:
		return err
	default:
		rep.IdleTasks, rep.IdleSeconds, rep.IdleCPUms, rep.RSSMiB = tasks, secs, cpu, rss
	}
	return nil
}
