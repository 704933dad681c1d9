package friction

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Layout and limits of the log file.
const (
	// Dir is the log's directory, relative to the workspace root.
	Dir = "friction"
	// File is the log, relative to the workspace root.
	File = "friction/friction.json"
	// DefaultTimeout bounds the wait for the log's lock when Log.Timeout
	// is zero.
	DefaultTimeout = 30 * time.Second
	// MaxFileBytes is the largest log the package reads; a larger one is
	// refused as invalid rather than loaded.
	MaxFileBytes = 16 << 20
	// IDPrefix starts every entry id: friction_001, friction_002, …
	// (three digits at least, more past 999).
	IDPrefix = "friction_"
	// AnonPrefix starts an anonymised task id (see AnonymizeTasks).
	AnonPrefix = "anon_"
)

// Entry is one entry of the log, in the order its fields are written.
type Entry struct {
	// ID is "friction_NNN", assigned by the log.
	ID string `json:"id"`
	// Timestamp is when the entry was first recorded (UTC).
	Timestamp time.Time `json:"timestamp"`
	// Type is one of the five entry types.
	Type string `json:"type"`
	// Description says what happened.
	Description string `json:"description"`
	// Occurrences is how often the friction was seen (at least 1).
	Occurrences int `json:"occurrences"`
	// AffectedTasks are the task ids concerned, sorted, without
	// duplicates; always written, possibly empty.
	AffectedTasks []string `json:"affected_tasks"`
	// Pattern is what repeats are recognised by, compared with case and
	// spacing aside; may be empty.
	Pattern string `json:"pattern"`
	// SuggestedAction says what a person could do about it; may be empty.
	SuggestedAction string `json:"suggested_action"`
	// Status is pending, applied or dismissed.
	Status string `json:"status"`
}

// document is friction.json: the entries, in id order, and the detectors'
// tally.
type document struct {
	Entries []Entry `json:"entries"`
	Tally   Tally   `json:"tally"`
}

// Filter selects entries in List; an empty field matches everything.
type Filter struct {
	Status string
	Type   string
}

// Log is the friction log of one workspace, kept in a store's document
// (workspace.FrictionDoc; Open gives a store's log). Its methods are safe
// for concurrent use by goroutines and processes: every change is a
// read-modify-write under the document's lock, and a reader (List, Get)
// sees the log before or after a change, never in between. Fields are
// read-only once the Log is in use.
type Log struct {
	// Storage keeps the log's document; the Log checks what it reads,
	// applies each change and encodes the result canonically.
	Storage workspace.FrictionDoc
	// Timeout bounds the lock wait (zero: DefaultTimeout); a wait that
	// times out fails with an error satisfying errors.Is(err,
	// locking.ErrLocked) that names the holder.
	Timeout time.Duration
	// Agent names the lock holder in the lock file, for diagnostics.
	Agent string
	// Now stamps new entries (nil: time.Now).
	Now func() time.Time

	mu       sync.Mutex
	valid    [sha256.Size]byte // the last log found valid
	hasValid bool
}

func (l *Log) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// path is the log's name in messages.
func (l *Log) path() string { return l.Storage.Name() }

// List returns the entries matching f, in id order. It takes no lock. An
// unknown status or type in f is ErrInvalid; a missing log is empty.
func (l *Log) List(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Status != "" && !IsStatus(f.Status) {
		return nil, fmt.Errorf("list friction: status %q: %w (want %s)", f.Status, ErrInvalid, strings.Join(Statuses, ", "))
	}
	if f.Type != "" && !IsType(f.Type) {
		return nil, fmt.Errorf("list friction: type %q: %w (want %s)", f.Type, ErrInvalid, strings.Join(Types, ", "))
	}
	doc, _, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, e := range doc.Entries {
		if (f.Status == "" || e.Status == f.Status) && (f.Type == "" || e.Type == f.Type) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Get returns the entry with the given id, or an error wrapping
// ErrNotFound. It takes no lock.
func (l *Log) Get(ctx context.Context, id string) (Entry, error) {
	doc, _, err := l.read(ctx)
	if err != nil {
		return Entry{}, err
	}
	if i := indexOf(doc.Entries, id); i >= 0 {
		return doc.Entries[i], nil
	}
	return Entry{}, fmt.Errorf("friction entry %s: %w", id, ErrNotFound)
}

// Add records e. The log assigns the id, the timestamp and the pending
// status; occurrences below 1 count as 1; affected tasks are sorted and
// made unique. If a pending entry of the same type has the same pattern
// (or, with no pattern, the same description), case and spacing aside,
// Add merges e into it instead: its occurrences grow by
// e's, e's tasks join its affected tasks, and an empty suggested action is
// filled in. Add returns the stored entry and whether it is new. An
// unknown type, an empty description or a malformed task id is
// ErrInvalid, and nothing is written.
func (l *Log) Add(ctx context.Context, e Entry) (Entry, bool, error) {
	if !IsType(e.Type) {
		return Entry{}, false, fmt.Errorf("add friction: type %q: %w (want %s)", e.Type, ErrInvalid, strings.Join(Types, ", "))
	}
	if strings.TrimSpace(e.Description) == "" {
		return Entry{}, false, fmt.Errorf("add friction: empty description: %w", ErrInvalid)
	}
	for _, id := range e.AffectedTasks {
		if !vocab.ValidID(id) {
			return Entry{}, false, fmt.Errorf("add friction: task id %q: %w", id, ErrInvalid)
		}
	}
	var (
		out   Entry
		isNew bool
	)
	err := l.update(ctx, func(doc *document) error {
		i, created := l.apply(doc, e.Type, e.Description, e.Pattern, e.SuggestedAction, e.Occurrences, e.AffectedTasks)
		out, isNew = doc.Entries[i], created
		return nil
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("add friction: %w", err)
	}
	return out, isNew, nil
}

// Resolve sets the status of entry id to applied or dismissed (a resolved
// entry may be resolved again, to either). Any other status is ErrInvalid;
// an unknown id is ErrNotFound.
func (l *Log) Resolve(ctx context.Context, id, status string) (Entry, error) {
	if status != StatusApplied && status != StatusDismissed {
		return Entry{}, fmt.Errorf("resolve friction %s: status %q: %w (want applied or dismissed)", id, status, ErrInvalid)
	}
	var out Entry
	err := l.update(ctx, func(doc *document) error {
		i := indexOf(doc.Entries, id)
		if i < 0 {
			return fmt.Errorf("friction entry %s: %w", id, ErrNotFound)
		}
		doc.Entries[i].Status = status
		out = doc.Entries[i]
		return nil
	})
	if err != nil {
		return Entry{}, fmt.Errorf("resolve friction: %w", err)
	}
	return out, nil
}

// Record applies detector findings in one locked write: each one is
// merged into the pending entry with its type and pattern (case and
// spacing aside), or becomes a new entry. A finding with a Once key already recorded for its
// task is dropped. Record returns the entries it added or changed, each
// once, in the order first touched. A finding with an unknown type, no
// description or a malformed task id is ErrInvalid, and nothing is
// written.
func (l *Log) Record(ctx context.Context, findings []Finding) ([]Entry, error) {
	if err := checkFindings(findings); err != nil {
		return nil, fmt.Errorf("record friction: %w", err)
	}
	if len(findings) == 0 {
		return nil, nil
	}
	var out []Entry
	err := l.update(ctx, func(doc *document) error {
		out = l.applyFindings(doc, findings)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record friction: %w", err)
	}
	return out, nil
}

// Observe runs Detect over each observation in turn, starting from the
// tally stored in the log, and records the findings, all in one locked
// write that also stores the new tally. It returns the entries added or
// changed, as Record does. This is what the daemon calls with the events
// it has just emitted.
func (l *Log) Observe(ctx context.Context, obs []Observation, cfg Config) ([]Entry, error) {
	var out []Entry
	err := l.update(ctx, func(doc *document) error {
		var fs []Finding
		for _, o := range obs {
			fs = append(fs, detect(&doc.Tally, o, cfg)...)
		}
		if err := checkFindings(fs); err != nil {
			return err
		}
		out = l.applyFindings(doc, fs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("observe friction: %w", err)
	}
	return out, nil
}

// Tally returns the detectors' tally as stored in the log. It takes no
// lock.
func (l *Log) Tally(ctx context.Context) (Tally, error) {
	doc, _, err := l.read(ctx)
	return doc.Tally, err
}

var anonForm = regexp.MustCompile(`^` + AnonPrefix + `[0-9a-f]{12}$`)

// AnonymizeID returns the anonymised form of a task id: "anon_" and the
// first 12 hex digits of its SHA-256. The same id always gives the same
// form, so friction about one pruned task still reads as one task.
func AnonymizeID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return AnonPrefix + hex.EncodeToString(sum[:])[:12]
}

// AnonymizeTasks replaces each of the given task ids, wherever the log
// holds it (affected tasks, descriptions, patterns, suggested actions and
// the tally), by AnonymizeID(id). Retention calls it for the tasks it
// removes. It returns how many entries changed; it is idempotent (ids
// already in the anonymised form are left alone), and writes nothing when
// nothing changes.
func (l *Log) AnonymizeTasks(ctx context.Context, ids []string) (int, error) {
	repl := map[string]string{}
	for _, id := range ids {
		if id != "" && !anonForm.MatchString(id) {
			repl[id] = AnonymizeID(id)
		}
	}
	if len(repl) == 0 {
		return 0, nil
	}
	changed := 0
	err := l.update(ctx, func(doc *document) error {
		changed = 0
		for i := range doc.Entries {
			if anonymizeEntry(&doc.Entries[i], repl) {
				changed++
			}
		}
		anonymizeTally(&doc.Tally, repl)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("anonymize friction: %w", err)
	}
	return changed, nil
}

func anonymizeEntry(e *Entry, repl map[string]string) bool {
	changed := false
	tasks := make([]string, 0, len(e.AffectedTasks))
	for _, t := range e.AffectedTasks {
		if a, ok := repl[t]; ok {
			t, changed = a, true
		}
		tasks = append(tasks, t)
	}
	e.AffectedTasks = mergeSorted(tasks)
	for _, s := range []*string{&e.Description, &e.Pattern, &e.SuggestedAction} {
		if n := replaceIDs(*s, repl); n != *s {
			*s, changed = n, true
		}
	}
	return changed
}

// isIDByte reports whether b continues an id for the purpose of finding
// an id in prose. A dot does not: "task foo." names foo.
func isIDByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// replaceIDs replaces every occurrence of an id of repl in s that is not
// part of a longer word.
func replaceIDs(s string, repl map[string]string) string {
	for id, a := range repl {
		if !strings.Contains(s, id) {
			continue
		}
		var b strings.Builder
		i := 0
		for {
			j := strings.Index(s[i:], id)
			if j < 0 {
				b.WriteString(s[i:])
				break
			}
			start, end := i+j, i+j+len(id)
			b.WriteString(s[i:start])
			if start > 0 && isIDByte(s[start-1]) || end < len(s) && isIDByte(s[end]) {
				b.WriteString(id)
			} else {
				b.WriteString(a)
			}
			i = end
		}
		s = b.String()
	}
	return s
}

func anonymizeTally(t *Tally, repl map[string]string) {
	fixCount := func(c Count) Count {
		tasks := make([]string, 0, len(c.Tasks))
		for _, id := range c.Tasks {
			if a, ok := repl[id]; ok {
				id = a
			}
			tasks = append(tasks, id)
		}
		c.Tasks = mergeSorted(tasks)
		if c.Reviews != nil {
			reviews := make([]string, 0, len(c.Reviews))
			for _, r := range c.Reviews {
				task, review, _ := strings.Cut(r, "/")
				if a, ok := repl[task]; ok {
					r = a + "/" + review
				}
				reviews = append(reviews, r)
			}
			c.Reviews = mergeSorted(reviews)
		}
		return c
	}
	for k, c := range t.Failures {
		t.Failures[k] = fixCount(c)
	}
	for k, c := range t.Problems {
		t.Problems[k] = fixCount(c)
	}
	for id, a := range repl {
		tt, ok := t.Tasks[id]
		if !ok {
			continue
		}
		delete(t.Tasks, id)
		prev := t.Tasks[a]
		tt.Reported = mergeSorted(prev.Reported, tt.Reported...)
		for k, v := range prev.Revisions {
			if tt.Revisions == nil {
				tt.Revisions = map[string]int{}
			}
			tt.Revisions[k] = max(tt.Revisions[k], v)
		}
		t.Tasks[a] = tt
	}
}

func checkFindings(fs []Finding) error {
	for _, f := range fs {
		if !IsType(f.Type) {
			return fmt.Errorf("finding type %q: %w", f.Type, ErrInvalid)
		}
		if strings.TrimSpace(f.Description) == "" {
			return fmt.Errorf("finding of type %s has no description: %w", f.Type, ErrInvalid)
		}
		for _, id := range append([]string{f.TaskID}, f.Tasks...) {
			if id != "" && !vocab.ValidID(id) {
				return fmt.Errorf("finding task id %q: %w", id, ErrInvalid)
			}
		}
	}
	return nil
}

// applyFindings merges fs into doc and returns the touched entries.
func (l *Log) applyFindings(doc *document, fs []Finding) []Entry {
	var touched []int
	for _, f := range fs {
		if f.Once != "" && f.TaskID != "" {
			if doc.Tally.reported(f.TaskID, f.Once) {
				continue
			}
			doc.Tally.report(f.TaskID, f.Once)
		}
		i, _ := l.apply(doc, f.Type, f.Description, f.Pattern, f.SuggestedAction, f.Occurrences, append([]string{f.TaskID}, f.Tasks...))
		if !slices.Contains(touched, i) {
			touched = append(touched, i)
		}
	}
	out := make([]Entry, 0, len(touched))
	for _, i := range touched {
		out = append(out, doc.Entries[i])
	}
	return out
}

// apply merges one occurrence into the matching pending entry, or appends
// a new entry. It returns the entry's index and whether it is new.
func (l *Log) apply(doc *document, typ, desc, pattern, action string, occ int, tasks []string) (int, bool) {
	occ = max(occ, 1)
	key := dedupKey(typ, pattern, desc)
	for i := range doc.Entries {
		e := &doc.Entries[i]
		if e.Status != StatusPending || e.Type != typ || dedupKey(e.Type, e.Pattern, e.Description) != key {
			continue
		}
		e.Occurrences += occ
		e.AffectedTasks = mergeSorted(e.AffectedTasks, tasks...)
		if e.SuggestedAction == "" {
			e.SuggestedAction = strings.TrimSpace(action)
		}
		return i, false
	}
	doc.Entries = append(doc.Entries, Entry{
		ID:              nextID(doc.Entries),
		Timestamp:       l.now(),
		Type:            typ,
		Description:     strings.TrimSpace(desc),
		Occurrences:     occ,
		AffectedTasks:   mergeSorted(nil, tasks...),
		Pattern:         strings.TrimSpace(pattern),
		SuggestedAction: strings.TrimSpace(action),
		Status:          StatusPending,
	})
	return len(doc.Entries) - 1, true
}

// nextID is one past the highest friction_<n> id in use.
func nextID(es []Entry) string {
	n := 0
	for _, e := range es {
		if s, ok := strings.CutPrefix(e.ID, IDPrefix); ok {
			if v, err := strconv.Atoi(s); err == nil && v > n {
				n = v
			}
		}
	}
	return fmt.Sprintf("%s%03d", IDPrefix, n+1)
}

func indexOf(es []Entry, id string) int {
	return slices.IndexFunc(es, func(e Entry) bool { return e.ID == id })
}

// update is the read-modify-write: under the lock, read the log, let fn
// change it, and write it back if its canonical bytes changed. An error
// from fn writes nothing.
func (l *Log) update(ctx context.Context, fn func(*document) error) (err error) {
	timeout := l.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return l.Storage.Update(ctx, l.Agent, timeout, func(old []byte) ([]byte, error) {
		doc, err := l.parse(old)
		if err != nil {
			return nil, err
		}
		data, err := l.change(&doc, old, fn)
		if err == nil && data != nil {
			l.remember(data)
		}
		return data, err
	})
}

// change applies fn to doc, read as old, and returns the document to
// write: its canonical bytes, or nil when they are old's (nothing to
// write).
func (l *Log) change(doc *document, old []byte, fn func(*document) error) ([]byte, error) {
	if err := fn(doc); err != nil {
		return nil, err
	}
	// Never write what we would refuse to read back. The schema is not run
	// here: it costs milliseconds per hundred entries, and checkDoc holds
	// what the log itself could get wrong.
	if err := checkDoc(doc); err != nil {
		return nil, fmt.Errorf("refusing to write %s: %w", l.path(), err)
	}
	data, err := atomicfile.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", l.path(), err)
	}
	if bytes.Equal(data, old) {
		return nil, nil
	}
	return data, nil
}

// read loads the log and returns it with the bytes read. A missing file
// is an empty log; a file that does not parse or validate is an error
// wrapping ErrCorrupt that names the file.
func (l *Log) read(ctx context.Context) (document, []byte, error) {
	data, err := l.Storage.Read(ctx)
	if err != nil {
		return document{Entries: []Entry{}}, nil, err
	}
	doc, err := l.parse(data)
	if err != nil {
		return doc, nil, err
	}
	return doc, data, nil
}

// parse checks and decodes the log's bytes; nil is the empty log.
func (l *Log) parse(data []byte) (document, error) {
	doc := document{Entries: []Entry{}}
	if data == nil {
		return doc, nil
	}
	if len(data) > MaxFileBytes {
		return doc, fmt.Errorf("%s: %w: larger than %d bytes", l.path(), ErrCorrupt, MaxFileBytes)
	}
	if !l.known(data) {
		if err := schemas.Validate(schemas.KindFriction, data); err != nil {
			return doc, fmt.Errorf("%s: %w: %v (fix or move the file; it is never overwritten)", l.path(), ErrCorrupt, err)
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("%s: %w: %v", l.path(), ErrCorrupt, err)
	}
	if doc.Entries == nil {
		doc.Entries = []Entry{}
	}
	// Fields the schema lets a hand-written entry leave out get the
	// values the log writes for them.
	for i := range doc.Entries {
		e := &doc.Entries[i]
		if e.AffectedTasks == nil {
			e.AffectedTasks = []string{}
		}
		e.Occurrences = max(e.Occurrences, 1)
	}
	if err := checkDoc(&doc); err != nil {
		return doc, fmt.Errorf("%s: %w (fix or move the file; it is never overwritten)", l.path(), err)
	}
	l.remember(data)
	return doc, nil
}

var entryID = regexp.MustCompile(`^` + IDPrefix + `[0-9]{3,}$`)

// checkDoc checks what the schema says of entries and what it cannot say
// (unique ids). Errors wrap ErrCorrupt.
func checkDoc(doc *document) error {
	seen := make(map[string]bool, len(doc.Entries))
	for i, e := range doc.Entries {
		var problem string
		switch {
		case !entryID.MatchString(e.ID):
			problem = fmt.Sprintf("id %q is not %sNNN", e.ID, IDPrefix)
		case seen[e.ID]:
			problem = fmt.Sprintf("duplicate id %q", e.ID)
		case !IsType(e.Type):
			problem = fmt.Sprintf("unknown type %q", e.Type)
		case !IsStatus(e.Status):
			problem = fmt.Sprintf("unknown status %q", e.Status)
		case e.Occurrences < 1:
			problem = fmt.Sprintf("occurrences %d below 1", e.Occurrences)
		}
		if problem != "" {
			return fmt.Errorf("%w: entries[%d]: %s", ErrCorrupt, i, problem)
		}
		seen[e.ID] = true
	}
	return nil
}

// known reports whether data is the log this Log last read or wrote and
// found valid, so that the schema need not run again.
func (l *Log) known(data []byte) bool {
	sum := sha256.Sum256(data)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hasValid && l.valid == sum
}

// remember records data as a valid log.
func (l *Log) remember(data []byte) {
	sum := sha256.Sum256(data)
	l.mu.Lock()
	l.valid, l.hasValid = sum, true
	l.mu.Unlock()
}
