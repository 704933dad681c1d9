package workspace

// PositionedEvent is an event with its place in the task's events: End
// is the position just after it (where the next read begins), Start a
// position that reads it again. Positions are a store's opaque cursors
// (see LiveReader); on the tree Start is the byte offset of the event's
// line in events.log and End the offset just past its newline. A
// position never changes (events are only appended), so each names the
// event for good.
type PositionedEvent struct {
	Event
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}
