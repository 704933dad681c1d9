package sqlstore

import (
	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

// FrictionRowName names the friction log's row in files (by its path in
// the tree, friction.File) in messages.
const FrictionRowName = "friction log (files row " + friction.File + ")"

// FrictionEvents are the friction_recorded events that note entry e
// (recorded, or merged when isNew is false) in tasks, one a task; an id
// that is not a task's is left out.
func FrictionEvents(e friction.Entry, isNew bool, tasks []string) []workspace.Event {
	var out []workspace.Event
	for _, t := range tasks {
		if workspace.ValidateID("task id", t) == nil {
			out = append(out, workspace.FrictionRecorded(e, isNew, t))
		}
	}
	return out
}
