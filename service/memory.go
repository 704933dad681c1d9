package service

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

// Namespaced memory: long-term items under a namespace of labels, on
// every store (workspace.MemoryStore; the rules in workspace/memory.go).
// Every door calls these. Who may: a door that admits agents by their
// tokens lets a grant read namespaced memory when it may read the global
// memory (global_memory read or write) and write it when it may write the
// global memory (write), as the global memory is the one other memory
// every agent shares; the items a write stores name the caller's agent
// in their events. A door without tokens (the CLI, a trusted listener)
// lets its agent do all of it.

// Memory is st's namespaced memory, or ErrInvalid naming the store when
// it keeps none.
func Memory(st workspace.Store) (workspace.MemoryStore, error) {
	if m, ok := workspace.As[workspace.MemoryStore](st); ok {
		return m, nil
	}
	return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "memory namespaces", Msg: "this store keeps no namespaced memory",
		Hint: "use a directory, sqlite: or postgres:// root, which keep it"}
}

// GuardsGrant reports whether st checks a grant guard in its operation op
// (workspace.GrantGuarding, op one of workspace.GuardedMemoryGet…): a
// door may then admit a token's request for op on the grant it
// remembers, the guard in the operation's context, instead of looking
// the token up.
func GuardsGrant(st workspace.Store, op string) bool {
	g, ok := workspace.As[workspace.GrantGuarding](st)
	return ok && g.GuardsGrant(op)
}

// MemoryPut creates or replaces an item (MemoryStore.PutMemory).
func MemoryPut(ctx context.Context, st workspace.Store, req workspace.MemoryPutRequest) (workspace.MemoryItem, error) {
	m, err := Memory(st)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	return m.PutMemory(ctx, req)
}

// MemoryGet reads one live item.
func MemoryGet(ctx context.Context, st workspace.Store, ns workspace.Namespace, key string) (workspace.MemoryItem, error) {
	m, err := Memory(st)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	return m.GetMemory(ctx, ns, key)
}

// MemoryDelete removes a live item.
func MemoryDelete(ctx context.Context, st workspace.Store, req workspace.MemoryDeleteRequest) error {
	m, err := Memory(st)
	if err != nil {
		return err
	}
	return m.DeleteMemory(ctx, req)
}

// MemorySearch lists one page of the live items under a prefix that a
// filter matches.
func MemorySearch(ctx context.Context, st workspace.Store, req workspace.MemorySearchRequest) ([]workspace.MemoryItem, error) {
	m, err := Memory(st)
	if err != nil {
		return nil, err
	}
	return m.SearchMemory(ctx, req)
}

// MemoryFilter reads a search's filter (JSON; empty or null for none)
// within st's limits.
func MemoryFilter(st workspace.Store, data []byte) (workspace.MemoryFilter, error) {
	return workspace.ParseMemoryFilter(data, st.Settings().Limits)
}

// MemoryNamespaces lists one page of the namespaces that hold live items.
func MemoryNamespaces(ctx context.Context, st workspace.Store, q workspace.NamespaceQuery) ([]workspace.Namespace, error) {
	m, err := Memory(st)
	if err != nil {
		return nil, err
	}
	return m.ListMemoryNamespaces(ctx, q)
}

// MemoryEvents calls each for every memory event after position pos and
// returns the position to read from next.
func MemoryEvents(ctx context.Context, st workspace.Store, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	m, err := Memory(st)
	if err != nil {
		return pos, err
	}
	return m.ReadMemoryEvents(ctx, pos, each)
}

// MemoryPutItems applies a batch of puts in their order
// (workspace.PutMemoryItems): in one transaction on a store that writes
// batches (SQLite, PostgreSQL), else one by one (the tree).
func MemoryPutItems(ctx context.Context, st workspace.Store, reqs []workspace.MemoryPutRequest) ([]workspace.MemoryPutResult, error) {
	m, err := Memory(st)
	if err != nil {
		return nil, err
	}
	return workspace.PutMemoryItems(ctx, m, st.Settings().Limits, reqs)
}
