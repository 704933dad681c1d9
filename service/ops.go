package service

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

// The operations every store shares over its Store (workspace/ops):
// context assembly, the delegation preamble, the system context,
// provenance chains, skills in context and thread activation. A door
// calls them here, so where they live is this file's business alone.

// Context assembles thread threadID's context within opt's token budget.
func Context(ctx context.Context, st workspace.Store, threadID string, opt ops.ContextOptions) (ops.ContextBundle, error) {
	return ops.Over(st).Context(ctx, threadID, opt)
}

// Preamble is the delegation preamble thread threadID's agent receives.
func Preamble(ctx context.Context, st workspace.Store, threadID string, opt ops.PreambleOptions) (ops.Preamble, error) {
	return ops.Over(st).Preamble(ctx, threadID, opt)
}

// SystemContext is the "what am I" block of agent in task taskID, in the
// calls of the door s the agent uses.
func SystemContext(ctx context.Context, st workspace.Store, agent, taskID string, s ops.Surface) (string, error) {
	return ops.Over(st).SystemContextFor(ctx, agent, taskID, s)
}

// Capabilities is what agent may do in task taskID, as its tools say it.
func Capabilities(ctx context.Context, st workspace.Store, agent, taskID string) (string, error) {
	return ops.Over(st).Capabilities(ctx, agent, taskID)
}

// Chain is thread threadID's delegation chain, from the root thread down.
func Chain(ctx context.Context, st workspace.Store, taskID, threadID string) ([]workspace.Thread, error) {
	return ops.Over(st).Chain(ctx, taskID, threadID)
}

// ActivateThread marks thread threadID active for agent and says what it
// loads.
func ActivateThread(ctx context.Context, st workspace.Store, taskID, threadID, agent string) (ops.Activation, error) {
	return ops.Over(st).ActivateThread(ctx, taskID, threadID, agent)
}

// ThreadSkills are the skills thread threadID's context loads, by its
// mode and tags.
func ThreadSkills(ctx context.Context, st workspace.Store, taskID, threadID string) ([]ops.SkillChoice, error) {
	return ops.Over(st).ThreadSkills(ctx, taskID, threadID)
}

// Watched is st as the live panel watches it; a store that reports no
// changes is refused, since the panel's pages are live.
func Watched(st workspace.Store) (workspace.Watcher, error) {
	if w, ok := workspace.As[workspace.Watcher](st); ok {
		return w, nil
	}
	return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "serve the panel",
		Msg:  "this store does not report its changes, and the panel's pages are live",
		Hint: "serve the panel over a directory or a postgres:// root; for another store, watch a copy on files ('workspaced export --from ROOT --to DIR', then 'workspaced --root DIR web')"}
}
