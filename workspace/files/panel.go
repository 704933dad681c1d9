package files

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/workspaced/workspaced/workspace"
)

// The tree's LiveReader: the events of a task from a byte position on,
// and the agents that keep memory.

// ReadEventsFrom calls each for every whole line of task taskID's
// events.log from byte offset off on, oldest first, and returns the offset
// just past the last whole line read (a partial last line is left for the
// next read). A line that does not parse is passed over but counted in the
// offset. A task without events.log gives off back; a missing task is
// ErrNotFound; a log that is a symlink, FIFO or device is ErrUnsafe.
func (w *Store) ReadEventsFrom(ctx context.Context, taskID string, off int64, each func(workspace.PositionedEvent)) (int64, error) {
	if err := w.requireTask(taskID); err != nil {
		return off, err
	}
	if off < 0 {
		return off, workspace.Invalidf("read events of task "+taskID, "", "negative offset %d", off)
	}
	f, err := w.openEventsLog(taskID, os.O_RDONLY)
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
	n, err := scanEventsAt(f, func(e workspace.Event, start, end int64) {
		each(workspace.PositionedEvent{Event: e, Start: pos + start, End: pos + end})
	})
	return off + n, err
}

// scanEventsAt is scanEvents with each line's offsets relative to the
// reader's start.
func scanEventsAt(r io.Reader, each func(e workspace.Event, start, end int64)) (int64, error) {
	var start int64
	return scanLines(r, func(line string, n int64) {
		s := start
		start += n
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return
		}
		if e, err := workspace.ParseEvent(line); err == nil {
			each(e, s, start)
		}
	})
}

// MemoryAgents lists the agents that keep memory (the directories of
// memory/agents/ named by a valid agent id), sorted.
func (w *Store) MemoryAgents(ctx context.Context) ([]string, error) {
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
			if de.IsDir() && workspace.ValidateID("agent", de.Name()) == nil {
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
