package files

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// AppendEvent appends one line to the task's events.log with a single
// write(2) on an O_APPEND file, so concurrent writers never interleave
// within a line. Events are a feed: they are not fsynced (state.json and
// the journal are the durable record).
func (w *Store) AppendEvent(ctx context.Context, e workspace.Event) error {
	if e.Time.IsZero() {
		e.Time = w.Now()
	}
	return w.AppendEvents(ctx, e.TaskID, []workspace.Event{e})
}

// AppendEvents appends several events of one task in one write.
func (w *Store) AppendEvents(ctx context.Context, taskID string, evs []workspace.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if err := w.checkTask(taskID); err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = w.Now()
		}
		b.WriteString(workspace.FormatEvent(e))
		b.WriteByte('\n')
	}
	name := path.Join("tasks", taskID, workspace.EventsFile)
	f, err := w.openEventsLog(taskID, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(b.String())
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("append event to %s: %w", name, werr)
	}
	return cerr
}

// appendEventsIn is AppendEvents of a commit, through dir, the task's
// directory open: events.log is opened with one openat(2) that follows no
// symlink (ErrUnsafe, as is a FIFO or anything but a regular file), and
// its descriptor is a plain one, not registered with the runtime's poller.
func (w *Store) appendEventsIn(dir *os.File, taskID string, evs []workspace.Event) error {
	name := path.Join(workspace.TaskDir(taskID), workspace.EventsFile)
	var b []byte
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = w.Now()
		}
		b = append(b, workspace.FormatEvent(e)...)
		b = append(b, '\n')
	}
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Openat(int(dir.Fd()), workspace.EventsFile, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(w.FilePerm().Perm()))
		if err != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(dir)
	switch {
	case errors.Is(err, syscall.ENXIO):
		return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a FIFO, not a regular file"}
	case errors.Is(err, syscall.ELOOP):
		return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a symlink, not a regular file"}
	case errors.Is(err, fs.ErrNotExist):
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: "append event to " + name, Err: err}
	case err != nil:
		return fmt.Errorf("append event to %s: %w", name, &os.PathError{Op: "open", Path: name, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		if fi, serr := f.Stat(); serr == nil {
			return &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a " + workspace.FileKind(fi.Mode()) + ", not a regular file"}
		}
		return fmt.Errorf("append event to %s: %w", name, &os.PathError{Op: "stat", Path: name, Err: err})
	}
	for len(b) > 0 && err == nil {
		var n int
		switch n, err = unix.Write(fd, b); {
		case err == unix.EINTR:
			err = nil
		case err == nil && n == 0:
			err = io.ErrShortWrite
		}
		b = b[max(n, 0):]
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append event to %s: %w", name, err)
	}
	return nil
}

// ReadEvents returns a task's events, oldest first. Lines that do not parse
// are returned as errors in bad, not dropped silently.
func (w *Store) ReadEvents(ctx context.Context, taskID string) (evs []workspace.Event, bad []error, err error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, nil, err
	}
	f, err := w.openEventsLog(taskID, os.O_RDONLY)
	if err != nil {
		if isNotExist(err) {
			if !w.exists(path.Join("tasks", taskID)) {
				return nil, nil, workspace.NotFoundf("task "+taskID, "list the tasks to see which exist", "no such task")
			}
			return nil, nil, nil
		}
		return nil, nil, err
	}
	defer f.Close()
	_, err = scanEvents(f, func(e workspace.Event) { evs = append(evs, e) }, func(e error) { bad = append(bad, e) })
	return evs, bad, err
}

// openEventsLog opens task taskID's events.log: for reading with
// os.O_RDONLY, for appending with os.O_WRONLY|os.O_APPEND (and os.O_CREATE
// to start a log). It is the one way into the log, for its writer
// (AppendEvents, the committer's endLine) and its readers alike: the file
// opened is a regular file reached without following a symlink, and a
// FIFO planted in its place fails to open instead of blocking. A missing
// log is ErrNotFound (and fs.ErrNotExist).
func (w *Store) openEventsLog(taskID string, flag int) (*os.File, error) {
	return w.openLog(path.Join(workspace.TaskDir(taskID), workspace.EventsFile), flag)
}

// openLog opens the event log name (from the root) as openEventsLog
// does: a task's events.log, or the memory events' log.
func (w *Store) openLog(name string, flag int) (*os.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		// Named before it is opened, so that a symlink is refused in
		// the same words as a FIFO or a directory.
		if lst, err := w.root.Lstat(name); err == nil && !lst.Mode().IsRegular() {
			return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a " + workspace.FileKind(lst.Mode()) + ", not a regular file"}
		}
		f, err := agentfile.Open(w.root, name)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + name, Msg: "is a " + workspace.FileKind(st.Mode()) + ", not a regular file"}
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	// O_NONBLOCK: a FIFO planted as events.log fails to open (no reader)
	// rather than blocking the writer; it changes nothing for a file.
	f, err := w.root.OpenFile(name, flag|syscall.O_NONBLOCK, w.FilePerm())
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a FIFO, not a regular file"}
		}
		if st, lerr := w.root.Lstat(name); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a symlink, not a regular file"}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "append event to " + name, Err: err}
		}
		return nil, fmt.Errorf("append event to %s: %w", name, err)
	}
	// os.Root follows a symlink that stays inside the root: the name
	// must be the file opened, a regular file.
	st, serr := f.Stat()
	lst, lerr := w.root.Lstat(name)
	switch {
	case serr != nil || lerr != nil:
		f.Close()
		return nil, fmt.Errorf("append event to %s: %w", name, errors.Join(serr, lerr))
	case lst.Mode()&fs.ModeSymlink != 0 || !st.Mode().IsRegular():
		f.Close()
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "append event to " + name, Msg: "is a " + workspace.FileKind(lst.Mode()) + ", not a regular file"}
	}
	return f, nil
}

func scanEvents(r io.Reader, each func(workspace.Event), badLine func(error)) (int64, error) {
	return scanLines(r, func(line string, _ int64) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return
		}
		e, perr := workspace.ParseEvent(line)
		if perr != nil {
			badLine(perr)
			return
		}
		each(e)
	})
}

// scanLines calls each for every whole line of r (with its newline) and
// its length in bytes, and returns the bytes consumed. A partial last line
// is left for the next read.
func scanLines(r io.Reader, each func(line string, n int64)) (int64, error) {
	br := bufio.NewReader(r)
	var n int64
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += int64(len(line))
		each(line, int64(len(line)))
	}
}

// FollowEvents calls each for every event of the given tasks (all tasks
// when taskID is ""), first the existing ones and then new ones as they are
// appended, until ctx is done. New tasks are picked up as they appear. It
// polls every interval (a plain file tail works on every filesystem).
func (w *Store) FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(workspace.Event)) error {
	offsets := map[string]int64{}
	first := true
	for {
		ids := []string{taskID}
		if taskID == "" {
			var err error
			if ids, err = w.TaskIDs(ctx); err != nil {
				return err
			}
		}
		for _, id := range ids {
			off, seen := offsets[id]
			if !seen && first && !fromStart {
				if st, err := w.root.Stat(path.Join("tasks", id, workspace.EventsFile)); err == nil {
					offsets[id] = st.Size()
					continue
				}
			}
			n, err := w.readEventsFrom(id, off, each)
			if err != nil {
				return err
			}
			offsets[id] = off + n
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (w *Store) readEventsFrom(taskID string, off int64, each func(workspace.Event)) (int64, error) {
	f, err := w.openEventsLog(taskID, os.O_RDONLY)
	if err != nil {
		// A log that is no regular file is not followed, nor waited on.
		if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, workspace.ErrUnsafe) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return scanEvents(f, each, func(error) {})
}
