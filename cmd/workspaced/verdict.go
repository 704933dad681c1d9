package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// defaultVerdictWait is how long --wait alone waits for a verdict: the
// daemon decides a marker within milliseconds, and even one whose event
// it missed within its periodic rescan (30 s by default).
const defaultVerdictWait = time.Minute

// waitFlag is --wait [DUR]: given alone it waits defaultVerdictWait.
type waitFlag struct {
	on bool
	d  time.Duration
}

func (f *waitFlag) IsBoolFlag() bool { return true }

func (f *waitFlag) String() string {
	if f == nil || !f.on {
		return ""
	}
	return f.d.String()
}

func (f *waitFlag) Set(s string) error {
	switch s {
	case "true":
		f.on, f.d = true, defaultVerdictWait
		return nil
	case "false":
		f.on = false
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if strings.Trim(s, "0123456789") == "" {
			return fmt.Errorf("%q has no unit (write %ss for seconds)", s, s)
		}
		return fmt.Errorf("%q is not a duration like 30s or 2m", s)
	}
	if d <= 0 {
		return fmt.Errorf("%q: the wait must be positive", s)
	}
	f.on, f.d = true, d
	return nil
}

// joinWait lets --wait take its duration as the next argument
// (--wait 30s): the flag package reads a boolean flag's value only after
// '=', so a following argument that parses as a duration is joined to it.
// A bare number there is refused: it is most likely seconds without their
// unit.
func joinWait(cmd string, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if (a == "--wait" || a == "-wait") && i+1 < len(args) {
			next := args[i+1]
			if _, err := time.ParseDuration(next); err == nil && !strings.HasPrefix(next, "-") {
				out = append(out, a+"="+next)
				i++
				continue
			}
			if next != "" && strings.Trim(next, "0123456789") == "" {
				return nil, &usageError{msg: fmt.Sprintf("%s: --wait %s: a duration needs a unit", cmd, next),
					hint: fmt.Sprintf("write --wait %ss for %s seconds", next, next)}
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// options are how the command waits for the verdict on its marker:
// with --wait, its duration, and a daemon beforeMarker found serving.
func (f waitFlag) options() service.DeliverOptions {
	if !f.on {
		return service.DeliverOptions{}
	}
	return service.DeliverOptions{Wait: f.d, Served: true}
}

// reportMarker ends a command that dropped the marker d.Marker (err is
// the drop's failure when no marker was dropped, else the wait's): with
// --wait it reports the daemon's verdict and exits by it — 0 won or
// applied, 3 no such subtask, 4 lost or refused (a reused marker name
// among the refusals), 1 no daemon or no verdict in time; without, it
// prints the marker.
func reportMarker(e *env, op, taskID string, d service.Delivery, err error, wf waitFlag, asJSON bool) error {
	if err != nil && d.Marker == "" {
		return err
	}
	if err != nil {
		return waitError(op, taskID, err, wf)
	}
	if !wf.on {
		if asJSON {
			return printJSON(e.stdout, map[string]string{"marker": e.displayMarker(taskID, d.Marker)})
		}
		fmt.Fprintln(e.stdout, e.displayMarker(taskID, d.Marker))
		return nil
	}
	if d.Stands != service.Decided {
		if d.Why == nil {
			// No source of verdicts: beforeMarker refuses --wait first.
			return &workspace.Error{Kind: workspace.ErrNotServing, Op: op, Msg: "no verdict can be read for this workspace"}
		}
		return waitError(op, taskID, d.Why, wf)
	}
	v := d.Verdict
	out := verdictOut{Verdict: v, MarkerPath: e.displayMarker(taskID, d.Marker)}
	if asJSON {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
	} else if v.Verdict == workspace.VerdictWon || v.Verdict == workspace.VerdictApplied {
		fmt.Fprintln(e.stdout, out.MarkerPath)
		fmt.Fprintln(e.stdout, describeVerdict(v))
	}
	return verdictErr(op, v)
}

// waitError is the error of a wait for the verdict that ended without
// one (no daemon, no verdict in time, the marker gone), said as op's.
func waitError(op, taskID string, err error, wf waitFlag) error {
	var we *workspace.Error
	if errors.As(err, &we) {
		c := *we
		c.Op = op + ": " + we.Op
		if errors.Is(err, workspace.ErrNoVerdict) {
			c.Msg = fmt.Sprintf("no verdict within %s: %s", wf.d, strings.TrimPrefix(we.Msg, "no verdict yet: "))
			c.Err = nil
			c.Hint = "the marker stays and the daemon decides it; see 'workspaced state show --task " + taskID + "', or wait longer with --wait DUR"
		}
		return &c
	}
	return fmt.Errorf("%s: %w", op, err)
}

// verdictOut is what --wait --json prints: the verdict and the marker's
// path.
type verdictOut struct {
	workspace.Verdict
	MarkerPath string `json:"marker_path"`
}

// describeVerdict is the line printed for a verdict.
func describeVerdict(v workspace.Verdict) string {
	var b strings.Builder
	b.WriteString(v.Verdict)
	if v.Reason != "" {
		b.WriteString(": " + v.Reason)
	}
	if v.Seq != 0 {
		fmt.Fprintf(&b, " (journal seq %d)", v.Seq)
	}
	if v.SubtaskID != "" && v.SubtaskStatus != "" {
		fmt.Fprintf(&b, "; subtask %s is %s", v.SubtaskID, v.SubtaskStatus)
		if v.Worker != "" {
			b.WriteString(" with " + v.Worker)
		}
	}
	fmt.Fprintf(&b, "; task %s is %s", v.TaskID, v.TaskStatus)
	return b.String()
}

// verdictErr is the error carrying a verdict's exit code: nil for won and
// applied.
func verdictErr(op string, v workspace.Verdict) error {
	switch v.Verdict {
	case workspace.VerdictWon, workspace.VerdictApplied:
		return nil
	case workspace.VerdictNotFound:
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: describeVerdict(v),
			Hint: "the approved plan has no such subtask; 'workspaced state show --task " + v.TaskID + "' lists them"}
	}
	hint := "see why in 'workspaced state show --task " + v.TaskID + "'"
	if v.Journaled != 0 {
		hint = "run the command again: it drops a marker under a fresh name"
	} else if v.Kind == workspace.KindClaim && v.Worker != "" && v.SubtaskStatus != "pending" {
		hint = "another agent has it; pick a pending subtask ('workspaced state show --task " + v.TaskID + "')"
	}
	return &workspace.Error{Kind: workspace.ErrConflict, Op: op, Msg: describeVerdict(v), Hint: hint}
}
