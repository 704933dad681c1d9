package files

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

// Rebuild derives a task's state from task.json and its journal records
// alone (plans come from the records that proposed them; plan.json and
// plans/ are the fallback), without reading state.json or the backups and
// without writing anything. Markers taken but not yet recorded (a daemon
// between the two steps) are not records and are left out. For a journal
// the daemon wrote, the result equals the state.json it wrote after the
// last record.
func Rebuild(ctx context.Context, ws *Store, taskID string) (workspace.State, error) {
	task, err := ws.GetTask(ctx, taskID)
	if err != nil {
		return workspace.State{}, err
	}
	recs, err := journalRecords(ws, taskID)
	if err != nil {
		return workspace.State{}, err
	}
	st := machine.Init(task)
	plans := func(version int) (*workspace.Plan, error) {
		return loadPlan(ctx, ws, taskID, st.PlanID, version)
	}
	st, _, err = machine.Continue(st, plans, recs)
	return st, err
}
