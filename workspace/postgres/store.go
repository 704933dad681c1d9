package postgres

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// A *Store is a workspace.Store: the CLI, the MCP server and the demo go
// through it as through the file tree.
var _ workspace.Store = (*Store)(nil)

// readTimeout bounds a read of the Store's interface, which takes no
// context.
const readTimeout = 30 * time.Second

// readCtx is the context of a read that was given none.
func (s *Store) readCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), readTimeout)
}

// notYet is the error of a part of the Store not yet kept in PostgreSQL.
func notYet(op string) error {
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "not yet on PostgreSQL",
		Hint: "use a workspace on files for this for now"}
}

// Stubs of the parts other files will give: events, friction, locks and
// retention. Each is removed when its real method lands.

func (s *Store) AppendEvent(e workspace.Event) error { return notYet("append event") }
func (s *Store) AppendEvents(taskID string, evs []workspace.Event) error {
	return notYet("append events")
}
func (s *Store) ReadEvents(taskID string) ([]workspace.Event, []error, error) {
	return nil, nil, notYet("read events")
}
func (s *Store) MergeEvents(ctx context.Context, taskIDs []string, each func(workspace.Event) error) ([]workspace.BadLines, error) {
	return nil, notYet("merge events")
}
func (s *Store) FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(workspace.Event)) error {
	return notYet("follow events")
}
func (s *Store) Friction(agent string) workspace.FrictionLog               { return noFriction{} }
func (s *Store) FrictionConfig() friction.Config                           { return friction.Config{} }
func (s *Store) NoteFriction(e friction.Entry, isNew bool, tasks []string) {}
func (s *Store) LockTaskNamed(ctx context.Context, taskID, name, agent string) (workspace.Lock, error) {
	return nil, notYet("lock")
}
func (s *Store) Locks(ctx context.Context) ([]workspace.LockInfo, error) {
	return nil, notYet("list locks")
}
func (s *Store) Prune(ctx context.Context, req workspace.PruneRequest) (retention.Report, error) {
	return retention.Report{}, notYet("prune")
}

// noFriction is the friction log until it is kept in PostgreSQL.
type noFriction struct{}

func (noFriction) Add(context.Context, friction.Entry) (friction.Entry, bool, error) {
	return friction.Entry{}, false, notYet("friction")
}
func (noFriction) Record(context.Context, []friction.Finding) ([]friction.Entry, error) {
	return nil, notYet("friction")
}
func (noFriction) Observe(context.Context, []friction.Observation, friction.Config) ([]friction.Entry, error) {
	return nil, notYet("friction")
}
func (noFriction) Resolve(context.Context, string, string) (friction.Entry, error) {
	return friction.Entry{}, notYet("friction")
}
func (noFriction) AnonymizeTasks(context.Context, []string) (int, error) {
	return 0, notYet("friction")
}
func (noFriction) Get(string) (friction.Entry, error)             { return friction.Entry{}, notYet("friction") }
func (noFriction) List(friction.Filter) ([]friction.Entry, error) { return nil, notYet("friction") }
func (noFriction) Tally() (friction.Tally, error)                 { return friction.Tally{}, notYet("friction") }
