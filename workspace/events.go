package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// EventsFile is a task's event log, relative to the task directory.
const EventsFile = "events.log"

// FormatEvent renders one events.log line (without the newline):
// <timestamp> <event> <task_id> [<arg> ...] [key=value ...], attrs sorted by
// key, and any word that is empty or holds a space, quote, '=' or a
// non-printable character quoted Go-style.
func FormatEvent(e Event) string {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format(TimeFormat))
	b.WriteByte(' ')
	b.WriteString(quoteWord(e.Name))
	b.WriteByte(' ')
	b.WriteString(quoteWord(e.TaskID))
	for _, a := range e.Args {
		b.WriteByte(' ')
		b.WriteString(quoteWord(a))
	}
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(' ')
		b.WriteString(quoteWord(k))
		b.WriteByte('=')
		b.WriteString(quoteWord(e.Attrs[k]))
	}
	return b.String()
}

// TimeFormat is RFC 3339 in UTC with milliseconds, as every file uses.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

func quoteWord(s string) string {
	if s == "" || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r == '\\' || r == 0x7f || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// ParseEvent parses one events.log line.
func ParseEvent(line string) (Event, error) {
	words, err := splitWords(line)
	if err != nil {
		return Event{}, err
	}
	if len(words) < 3 {
		return Event{}, fmt.Errorf("event line %q: want <time> <event> <task> [args]", line)
	}
	for _, w := range words[:3] {
		if w.attr {
			return Event{}, fmt.Errorf("event line %q: key=value where <time> <event> <task> belong", line)
		}
	}
	t, err := time.Parse(time.RFC3339Nano, words[0].text)
	if err != nil {
		return Event{}, fmt.Errorf("event line %q: bad time: %w", line, err)
	}
	e := Event{Time: t, Name: words[1].text, TaskID: words[2].text}
	for _, w := range words[3:] {
		if w.attr {
			if e.Attrs == nil {
				e.Attrs = map[string]string{}
			}
			e.Attrs[w.key] = w.text
			continue
		}
		e.Args = append(e.Args, w.text)
	}
	return e, nil
}

// word is one word of an events.log line: a bare or quoted word, or a
// key=value attribute (attr set: the key may be the empty word "").
type word struct {
	key, text string
	attr      bool
}

func splitWords(line string) ([]word, error) {
	var out []word
	i := 0
	for i < len(line) {
		if line[i] == ' ' {
			i++
			continue
		}
		text, n, err := readWord(line, i, " =")
		if err != nil {
			return nil, err
		}
		i += n
		w := word{text: text}
		// key=value: the word just read was the key (bare or quoted).
		if i < len(line) && line[i] == '=' {
			i++
			val, n, err := readWord(line, i, " ")
			if err != nil {
				return nil, err
			}
			i += n
			w = word{key: text, text: val, attr: true}
		}
		if i < len(line) && line[i] != ' ' {
			return nil, fmt.Errorf("event line: unexpected %q at %d after a quoted word", line[i], i)
		}
		out = append(out, w)
	}
	return out, nil
}

// readWord reads one word at line[i:]: a Go-quoted string, or bare bytes
// up to one of stop. It returns the text and the bytes consumed.
func readWord(line string, i int, stop string) (string, int, error) {
	if i < len(line) && line[i] == '"' {
		q, err := strconv.QuotedPrefix(line[i:])
		if err != nil {
			return "", 0, fmt.Errorf("event line: bad quoted word at %d: %w", i, err)
		}
		s, err := strconv.Unquote(q)
		if err != nil {
			return "", 0, fmt.Errorf("event line: bad quoted word at %d: %w", i, err)
		}
		return s, len(q), nil
	}
	j := strings.IndexAny(line[i:], stop)
	if j < 0 {
		j = len(line) - i
	}
	return line[i : i+j], j, nil
}

// AppendEvent appends one line to the task's events.log with a single
// write(2) on an O_APPEND file, so concurrent writers never interleave
// within a line. Events are a feed: they are not fsynced (state.json and
// the journal are the durable record).
func (w *Workspace) AppendEvent(ctx context.Context, e Event) error {
	if e.Time.IsZero() {
		e.Time = w.Now()
	}
	return w.AppendEvents(ctx, e.TaskID, []Event{e})
}

// AppendEvents appends several events of one task in one write.
func (w *Workspace) AppendEvents(ctx context.Context, taskID string, evs []Event) error {
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
		b.WriteString(FormatEvent(e))
		b.WriteByte('\n')
	}
	name := path.Join("tasks", taskID, EventsFile)
	// O_NONBLOCK: a FIFO planted as events.log fails to open (no reader)
	// rather than blocking the writer; it changes nothing for a file.
	f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, w.FilePerm())
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return &Error{Kind: ErrUnsafe, Op: "append event to " + name, Msg: "is a FIFO, not a regular file"}
		}
		if st, lerr := w.root.Lstat(name); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
			return &Error{Kind: ErrUnsafe, Op: "append event to " + name, Msg: "is a symlink, not a regular file"}
		}
		return fmt.Errorf("append event to %s: %w", name, err)
	}
	// os.Root follows a symlink that stays inside the root: the name
	// must be the file opened, a regular file.
	st, serr := f.Stat()
	lst, lerr := w.root.Lstat(name)
	switch {
	case serr != nil || lerr != nil:
		f.Close()
		return fmt.Errorf("append event to %s: %w", name, errors.Join(serr, lerr))
	case lst.Mode()&fs.ModeSymlink != 0 || !st.Mode().IsRegular():
		f.Close()
		return &Error{Kind: ErrUnsafe, Op: "append event to " + name, Msg: "is a " + FileKind(lst.Mode()) + ", not a regular file"}
	}
	_, werr := f.WriteString(b.String())
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("append event to %s: %w", name, werr)
	}
	return cerr
}

// ReadEvents returns a task's events, oldest first. Lines that do not parse
// are returned as errors in bad, not dropped silently.
func (w *Workspace) ReadEvents(ctx context.Context, taskID string) (evs []Event, bad []error, err error) {
	if err := w.checkTask(taskID); err != nil {
		return nil, nil, err
	}
	f, err := w.openEventsLog(taskID)
	if err != nil {
		if isNotExist(err) {
			if !w.exists(path.Join("tasks", taskID)) {
				return nil, nil, notFoundf("task "+taskID, "list the tasks to see which exist", "no such task")
			}
			return nil, nil, nil
		}
		return nil, nil, err
	}
	defer f.Close()
	_, err = scanEvents(f, func(e Event) { evs = append(evs, e) }, func(e error) { bad = append(bad, e) })
	return evs, bad, err
}

// openEventsLog opens a task's events.log for reading: a regular file,
// never through a symlink and never blocking on a FIFO (ErrUnsafe).
func (w *Workspace) openEventsLog(taskID string) (*os.File, error) {
	name := path.Join(TaskDir(taskID), EventsFile)
	f, err := openAgentFile(w.root, name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &Error{Kind: ErrUnsafe, Op: "read " + name, Msg: "is a " + FileKind(st.Mode()) + ", not a regular file"}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func scanEvents(r io.Reader, each func(Event), badLine func(error)) (int64, error) {
	return scanLines(r, func(line string, _ int64) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return
		}
		e, perr := ParseEvent(line)
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
func (w *Workspace) FollowEvents(ctx context.Context, taskID string, fromStart bool, interval time.Duration, each func(Event)) error {
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
				if st, err := w.root.Stat(path.Join("tasks", id, EventsFile)); err == nil {
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

func (w *Workspace) readEventsFrom(taskID string, off int64, each func(Event)) (int64, error) {
	f, err := w.openEventsLog(taskID)
	if err != nil {
		// A log that is no regular file is not followed, nor waited on.
		if isNotExist(err) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, ErrUnsafe) {
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
