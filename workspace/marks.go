package workspace

import "time"

// Mark is what a commit tells the daemon's metrics of one marker it
// applied: its kind, its verdict, and when it was dropped.
type Mark struct {
	// Kind is KindClaim or KindDone.
	Kind string
	// Verdict is one of the Verdict… constants, as an agent reads it
	// back from the state written.
	Verdict string
	// Dropped is when the marker was dropped (the file's modification
	// time; a row's dropped_at); zero when unknown.
	Dropped time.Time
}
