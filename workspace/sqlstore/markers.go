package sqlstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// insertMarker is how a marker goes in; dropped_at is the database's
// clock.
const insertMarker = "INSERT INTO markers (task_id, kind, name, body) VALUES ($1, $2, $3, $4)"

// DropMarker inserts a marker of kind (workspace.KindClaim or KindDone)
// for a task and returns its name, .<kind>.<agent>.<unique suffix>. The
// daemon applies it exactly once.
func (s *Store) DropMarker(ctx context.Context, taskID, kind string, m workspace.Marker) (string, error) {
	if kind != workspace.KindClaim && kind != workspace.KindDone {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "drop marker", Msg: fmt.Sprintf("kind %q is neither claim nor done", kind)}
	}
	if err := workspace.ValidateID("agent", m.AgentID); err != nil {
		return "", err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	name := "." + kind + "." + m.AgentID + "." + suffix()
	_, err = s.d.WriteOne(ctx, insertMarker, taskID, kind, name, string(data))
	if s.d.IsForeignKey(err) {
		return "", NotFoundTask(taskID)
	}
	if s.d.IsUnique(err) {
		return "", &workspace.Error{Kind: workspace.ErrConflict, Op: "drop marker " + name + " for task " + taskID, Err: err,
			Hint: "never reuse a marker name: give each marker a new random suffix"}
	}
	if err != nil {
		return "", fmt.Errorf("drop marker for task %s: %w", taskID, err)
	}
	return name, nil
}

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + hex.EncodeToString(b[:])
}
