package files

import (
	"bufio"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
	"golang.org/x/sys/unix"
)

// MergeEvents calls each for every event of the given tasks (every task
// directory when taskIDs is nil), oldest first: each task's events.log is
// read as a stream, in the order its lines were appended, and the streams
// are merged by time (container/heap); events of the same instant come in
// the order of taskIDs (sorted, when every task is read), then of their
// log. Each log is appended in time order, so this is the order a stable
// sort of every event by time gives; a log whose lines are out of time
// order is still read in its own order.
//
// Memory stays flat in the number of events and grows with the number of
// tasks by one pending line each: at most maxOpenLogs logs are open at
// once, and a log's reader is reopened at its offset when it is needed
// again; a line longer than MaxEventLine is skipped, not held. A missing
// log (no event yet, or a task removed meanwhile) is an empty stream; a
// partial last line (an append in progress) is left for the next read.
// Lines that do not parse are skipped and counted in the returned
// BadLines, one per task that has any, and so is a log that is not a
// regular file (a symlink is never followed, a FIFO never blocks the
// read). An error from each stops the merge and is returned.
func (w *Store) MergeEvents(ctx context.Context, taskIDs []string, each func(workspace.Event) error) ([]workspace.BadLines, error) {
	if taskIDs == nil {
		var err error
		if taskIDs, err = w.TaskIDs(ctx); err != nil {
			return nil, err
		}
	}
	if len(taskIDs) == 0 {
		return nil, nil
	}
	m := &merger{w: w, lastUse: map[*eventStream]uint64{}}
	defer m.closeAll()
	tasks, err := w.root.Open("tasks")
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer tasks.Close()
	m.tasks = tasks
	h := make(streamHeap, 0, len(taskIDs))
	var bad []workspace.BadLines
	finish := func(s *eventStream) {
		m.close(s)
		if s.bad > 0 || s.unread != nil {
			bad = append(bad, workspace.BadLines{TaskID: s.task, Count: s.bad, First: s.firstBad, Unread: s.unread})
		}
	}
	for i, id := range taskIDs {
		if err := ctx.Err(); err != nil {
			return bad, err
		}
		s := &eventStream{task: id, order: i}
		ok, err := m.next(s)
		if err != nil {
			return bad, err
		}
		if !ok {
			finish(s)
			continue
		}
		h = append(h, s)
	}
	heap.Init(&h)
	for n := 0; h.Len() > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return bad, err
			}
		}
		s := h[0]
		if ev, perr := workspace.ParseEvent(s.line); perr != nil {
			s.noteBad(perr)
		} else if err := each(ev); err != nil {
			return bad, err
		}
		ok, err := m.next(s)
		if err != nil {
			return bad, err
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		heap.Pop(&h)
		finish(s)
	}
	return bad, nil
}

// maxOpenLogs bounds the events.log files a merge keeps open: the logs
// being appended around one instant are few, and each open log holds a
// descriptor and a read buffer.
const maxOpenLogs = 64

// eventStream is one task's events.log being merged: its next line, the
// time it starts with, and where the line after it starts. The line is
// parsed whole only when its turn comes: a parsed event weighs several
// times its line, and every task has one waiting.
type eventStream struct {
	task  string
	order int // position in the merge's task list: breaks ties in time
	line  string
	t     time.Time
	off   int64 // offset of the next line to read

	f  *os.File // open while the stream is among the recently used
	br *bufio.Reader

	bad      int
	firstBad error
	unread   error
}

// merger owns the open logs of a merge.
type merger struct {
	w       *Store
	tasks   *os.File // tasks/, every log is opened relative to it
	open    []*eventStream
	lastUse map[*eventStream]uint64
	clock   uint64
	spare   []*bufio.Reader // readers of closed logs, reused
	line    []byte          // the line being read, reused
}

// next reads s's next event into s.ev; false at the end of the log.
func (m *merger) next(s *eventStream) (bool, error) {
	for {
		if s.br == nil {
			ok, err := m.reopen(s)
			if err != nil || !ok {
				return false, err
			}
		}
		m.clock++
		m.lastUse[s] = m.clock
		raw, n, err := m.readLine(s.br)
		if err == io.EOF {
			return false, nil // a partial last line is left for the next read
		}
		if err != nil {
			return false, err
		}
		s.off += n
		if raw == nil {
			s.noteBad(fmt.Errorf("event line of over %d bytes", workspace.MaxEventLine))
			continue
		}
		line := strings.TrimRight(string(raw), "\r\n")
		if line == "" {
			continue
		}
		t, ok := lineTime(line)
		if !ok {
			ev, perr := workspace.ParseEvent(line)
			if perr != nil {
				s.noteBad(perr)
				continue
			}
			t = ev.Time
		}
		s.line, s.t = line, t
		return true, nil
	}
}

// readLine reads one line of br, its newline included, and the bytes it
// took; the line is nil when it is longer than MaxEventLine. io.EOF means
// no whole line is left (a partial last line is not taken).
func (m *merger) readLine(br *bufio.Reader) ([]byte, int64, error) {
	line := m.line[:0]
	var n int64
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		n += int64(len(frag))
		if !tooLong {
			if len(line)+len(frag) > workspace.MaxEventLine {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, frag...)
			}
		}
		switch err {
		case nil:
			m.line = line
			if tooLong {
				return nil, n, nil
			}
			return line, n, nil
		case bufio.ErrBufferFull:
			continue
		}
		m.line = line
		return nil, n, err
	}
}

func (s *eventStream) noteBad(err error) {
	if s.bad == 0 {
		s.firstBad = err
	}
	s.bad++
}

// lineTime reads the time an events.log line starts with, as ParseEvent
// does, without parsing the rest; false when the first word is quoted
// or not a time (ParseEvent then decides).
func lineTime(line string) (time.Time, bool) {
	line = strings.TrimLeft(line, " ")
	end := strings.IndexAny(line, " =")
	if end < 0 {
		end = len(line)
	}
	if end == 0 || line[0] == '"' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, line[:end])
	return t, err == nil
}

// reopen opens s's log at its offset, closing the least recently used
// log first when maxOpenLogs are open. false when the log is missing.
func (m *merger) reopen(s *eventStream) (bool, error) {
	f, err := m.openLog(s.task)
	switch {
	case err == nil:
	case isNotExist(err) || errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case errors.Is(err, workspace.ErrUnsafe):
		s.unread = err
		return false, nil
	default:
		return false, err
	}
	if s.off > 0 {
		if _, err := f.Seek(s.off, io.SeekStart); err != nil {
			f.Close()
			return false, err
		}
	}
	if len(m.open) >= maxOpenLogs {
		oldest := 0
		for i, o := range m.open {
			if m.lastUse[o] < m.lastUse[m.open[oldest]] {
				oldest = i
			}
		}
		m.close(m.open[oldest])
	}
	s.f = f
	if n := len(m.spare); n > 0 {
		s.br = m.spare[n-1]
		m.spare = m.spare[:n-1]
		s.br.Reset(f)
	} else {
		s.br = bufio.NewReaderSize(f, 4096)
	}
	m.open = append(m.open, s)
	return true, nil
}

// openLog opens task's events.log like openEventsLog, but with one
// openat(2) for the task directory and one for the log, both relative to
// tasks/ and neither following a symlink: a merge opens every log at least
// once, and walking each path from the root twice (open, then lstat)
// would double the system calls.
func (m *merger) openLog(task string) (*os.File, error) {
	d, err := agentfile.OpenDirAt(m.tasks, task)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	f, err := agentfile.OpenAt(d, workspace.EventsFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + path.Join(workspace.TaskDir(task), workspace.EventsFile), Msg: "is a " + workspace.FileKind(st.Mode()) + ", not a regular file"}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// close closes s's log, if open; s.off says where to reopen it.
func (m *merger) close(s *eventStream) {
	if s.f == nil {
		return
	}
	s.f.Close()
	s.br.Reset(nil)
	m.spare = append(m.spare, s.br)
	s.f, s.br = nil, nil
	delete(m.lastUse, s)
	for i, o := range m.open {
		if o == s {
			m.open = append(m.open[:i], m.open[i+1:]...)
			break
		}
	}
}

func (m *merger) closeAll() {
	for len(m.open) > 0 {
		m.close(m.open[0])
	}
}

// streamHeap orders streams by their next event's time, then by their
// place in the task list.
type streamHeap []*eventStream

func (h streamHeap) Len() int { return len(h) }

func (h streamHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.t.Equal(b.t) {
		return a.t.Before(b.t)
	}
	return a.order < b.order
}

func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *streamHeap) Push(x any) { *h = append(*h, x.(*eventStream)) }

func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}
