package workspace

import (
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"syscall"
)

// The tree's LiveReader: the events of a task from a byte position on,
// and the agents that keep memory.

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

// ReadEventsFrom calls each for every whole line of task taskID's
// events.log from byte offset off on, oldest first, and returns the offset
// just past the last whole line read (a partial last line is left for the
// next read). A line that does not parse is passed over but counted in the
// offset. A task without events.log gives off back; a missing task is
// ErrNotFound; a log that is a symlink, FIFO or device is ErrUnsafe.
func (w *Workspace) ReadEventsFrom(ctx context.Context, taskID string, off int64, each func(PositionedEvent)) (int64, error) {
	if err := w.requireTask(taskID); err != nil {
		return off, err
	}
	if off < 0 {
		return off, invalidf("read events of task "+taskID, "", "negative offset %d", off)
	}
	f, err := w.openEventsLog(taskID)
	if err != nil {
		if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
			return off, nil
		}
		return off, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, err
	}
	pos := off
	n, err := scanEventsAt(f, func(e Event, start, end int64) {
		each(PositionedEvent{Event: e, Start: pos + start, End: pos + end})
	})
	return off + n, err
}

// scanEventsAt is scanEvents with each line's offsets relative to the
// reader's start.
func scanEventsAt(r io.Reader, each func(e Event, start, end int64)) (int64, error) {
	var start int64
	return scanLines(r, func(line string, n int64) {
		s := start
		start += n
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return
		}
		if e, err := ParseEvent(line); err == nil {
			each(e, s, start)
		}
	})
}

// MemoryAgents lists the agents that keep memory (the directories of
// memory/agents/ named by a valid agent id), sorted.
func (w *Workspace) MemoryAgents(ctx context.Context) ([]string, error) {
	f, err := w.root.Open("memory/agents")
	if err != nil {
		if isNotExist(err) {
			return []string{}, nil
		}
		return nil, err
	}
	defer f.Close()
	names := []string{}
	for {
		ents, err := f.ReadDir(512)
		for _, de := range ents {
			if de.IsDir() && ValidateID("agent", de.Name()) == nil {
				names = append(names, de.Name())
			}
		}
		if err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(names)
	return names, nil
}
