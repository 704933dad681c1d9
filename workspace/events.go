package workspace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	line, _, _ := formatEvent(e, "")
	return line
}

// FormatEventAround is FormatEvent of e around the value of its
// attribute attr: the line of e with attr's value v is head + v + tail
// for any v that is a bare word as the line writes it (a number, say).
// It formats the line once, for a writer that learns v as it writes.
func FormatEventAround(e Event, attr string) (head, tail string) {
	line, at, end := formatEvent(e, attr)
	return line[:at], line[end:]
}

// formatEvent is e's line and where in it attr's value stands
// (line[at:end]; both 0 when attr is "" or not an attribute of e).
func formatEvent(e Event, attr string) (line string, at, end int) {
	// The keys sorted in an array of the stack (an event has a handful),
	// the time appended, the line's size reserved: one allocation a line
	// where words need no quoting.
	var keysArr [8]string
	keys := keysArr[:0]
	n := len(TimeFormat) + len(e.Name) + len(e.TaskID) + 2
	for _, a := range e.Args {
		n += len(a) + 1
	}
	for k, v := range e.Attrs {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	var tb [len(TimeFormat) + 8]byte
	b.Write(e.Time.UTC().AppendFormat(tb[:0], TimeFormat))
	b.WriteByte(' ')
	b.WriteString(quoteWord(e.Name))
	b.WriteByte(' ')
	b.WriteString(quoteWord(e.TaskID))
	for _, a := range e.Args {
		b.WriteByte(' ')
		b.WriteString(quoteWord(a))
	}
	for _, k := range keys {
		b.WriteByte(' ')
		b.WriteString(quoteWord(k))
		b.WriteByte('=')
		start := b.Len()
		b.WriteString(quoteWord(e.Attrs[k]))
		if attr != "" && k == attr {
			at, end = start, b.Len()
		}
	}
	return b.String(), at, end
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

// BadLines counts the lines of one task's events.log that do not parse,
// or says why the log was not read at all.
type BadLines struct {
	TaskID string
	Count  int
	First  error // the first of them
	// Unread, when set, is why no line of the log was read: it is a
	// symlink, a FIFO or anything but a regular file (ErrUnsafe).
	Unread error
}

// MaxEventLine bounds a line of events.log a reader takes in: a longer
// one is skipped as a line that does not parse, without being held in
// memory whole.
const MaxEventLine = 1 << 20
