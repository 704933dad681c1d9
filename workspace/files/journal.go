package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// The journal of a task is its directory journal/. It holds three kinds
// of names:
//
//	000000000007.json                      the record of seq 7 (JournalRecord)
//	000000000008-000000000012.json         the records of seqs 8 to 12, taken in
//	                                       one chunk: {"records": [...]}
//	000000000013.taken.done.worker_1.x1    marker .done.worker_1.x1, taken as seq 13,
//	                                       whose record is not durable yet
//
// Taking a marker is a rename of the marker file itself into journal/ under
// the third name: the rename is the commit point (a marker is either still
// in the task directory or in the journal, never both and never neither),
// and the name keeps both the sequence number and the marker's original
// name. The records of a chunk are then written atomically beside the
// taken markers, in one file, and only once that file is durable are the
// taken files removed. After a crash at any point:
//
//   - a taken file with no record: the record is written from the taken
//     file on start (its taken_at is the recovery time);
//   - a taken file with a record file that reads back whole: the taken file
//     is just removed (after the record is made durable); with one that does
//     not (a power loss tore it), the record file is removed and every
//     record of it is written again from its taken file;
//   - a record past state.json's journal_seq: it is applied on start, and
//     its events are appended unless events.log already holds them (a
//     commit appends its events before its state: see eventlog.go).
//
// So every marker gets exactly one record, every record is applied once,
// and its events are logged once, in order. A marker name is journaled
// once: a marker dropped under a name the journal holds is refused
// without a record (names.go).

const (
	// JournalDir is a task's journal, relative to the task directory.
	JournalDir = "journal"
	// seqWidth zero-pads sequence numbers so names sort by sequence.
	seqWidth = 12
	// takenInfix separates the sequence number from the marker's name in
	// the name of a taken marker.
	takenInfix = ".taken"
)

// RecordName is the file name of the journal record of seq: 12 digits and
// ".json" ("000000000007.json").
func RecordName(seq int64) string {
	return fmt.Sprintf("%0*d.json", seqWidth, seq)
}

// BatchName is the file name of the records of seqs first to last, taken
// in one chunk ("000000000008-000000000012.json"). It holds a
// JournalBatch. A chunk of one record is written under RecordName.
func BatchName(first, last int64) string {
	return fmt.Sprintf("%0*d-%0*d.json", seqWidth, first, seqWidth, last)
}

// JournalBatch is the content of a batch file (BatchName): the records of
// consecutive seqs, in order, each a valid journal record.
type JournalBatch struct {
	Records []workspace.JournalRecord `json:"records"`
}

// takenName is the name of a marker taken as seq, inside journal/.
func takenName(seq int64, marker string) string {
	return fmt.Sprintf("%0*d%s%s", seqWidth, seq, takenInfix, marker)
}

// journalEntry is one name of a journal directory, parsed.
type journalEntry struct {
	seq    int64
	last   int64 // the last seq a record file holds (seq for all but a batch)
	name   string
	marker string // set for a taken marker: its original name
}

// parseSeq reads a zero-padded sequence number of seqWidth digits.
func parseSeq(digits string) (int64, bool) {
	if len(digits) != seqWidth {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil && seq > 0
}

// parseJournalName reads a journal file name back. ok is false for names
// that are neither a record, a batch nor a taken marker (temporary
// dot-files, or anything a person left there).
func parseJournalName(name string) (journalEntry, bool) {
	if len(name) < seqWidth+1 {
		return journalEntry{}, false
	}
	seq, ok := parseSeq(name[:seqWidth])
	if !ok {
		return journalEntry{}, false
	}
	rest := name[seqWidth:]
	if rest == ".json" {
		return journalEntry{seq: seq, last: seq, name: name}, true
	}
	if r, ok := strings.CutPrefix(rest, "-"); ok && len(r) == seqWidth+len(".json") && strings.HasSuffix(r, ".json") {
		if last, ok := parseSeq(r[:seqWidth]); ok && last > seq {
			return journalEntry{seq: seq, last: last, name: name}, true
		}
		return journalEntry{}, false
	}
	if m, ok := strings.CutPrefix(rest, takenInfix); ok {
		if _, isMarker := workspace.IsMarkerName(m); isMarker {
			return journalEntry{seq: seq, last: seq, name: name, marker: m}, true
		}
	}
	return journalEntry{}, false
}

// journalListing is what a journal directory holds.
type journalListing struct {
	records map[int64]string        // seq → the name of the file holding its record
	files   map[string]journalEntry // record and batch files by name
	taken   map[int64]journalEntry  // seq → its taken marker
	temps   []string                // dot-files: leftovers of an interrupted write
	maxSeq  int64
}

// listJournal lists a task's journal directory. A missing directory is an
// empty journal.
func listJournal(ws *Store, taskID string) (journalListing, error) {
	dir := path.Join(workspace.TaskDir(taskID), JournalDir)
	f, err := ws.Root().Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return newJournalListing(), nil
	}
	if err != nil {
		return newJournalListing(), fmt.Errorf("list journal of task %s: %w", taskID, err)
	}
	defer f.Close()
	return readJournalListing(f, taskID)
}

func newJournalListing() journalListing {
	return journalListing{records: map[int64]string{}, files: map[string]journalEntry{}, taken: map[int64]journalEntry{}}
}

// readJournalListing lists the open journal/ directory f of task taskID.
func readJournalListing(f *os.File, taskID string) (journalListing, error) {
	l := newJournalListing()
	for {
		names, err := f.Readdirnames(4096)
		for _, n := range names {
			e, ok := parseJournalName(n)
			if !ok {
				if strings.HasPrefix(n, ".") {
					l.temps = append(l.temps, n)
				}
				continue
			}
			if e.marker != "" {
				l.taken[e.seq] = e
			} else {
				l.files[e.name] = e
				for s := e.seq; s <= e.last; s++ {
					l.records[s] = e.name
				}
			}
			l.maxSeq = max(l.maxSeq, e.last)
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return l, fmt.Errorf("list journal of task %s: %w", taskID, err)
		}
	}
	return l, nil
}

// seqsAfter returns the sequence numbers past after that have a record or
// a taken marker, in order.
func (l journalListing) seqsAfter(after int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for s := range l.records {
		if s > after && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for s := range l.taken {
		if s > after && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// readRecordFile reads and decodes the record or batch file e: its records,
// in order, which must be exactly the seqs its name says.
func readRecordFile(ws *Store, taskID string, e journalEntry) ([]workspace.JournalRecord, error) {
	name := path.Join(workspace.TaskDir(taskID), JournalDir, e.name)
	data, err := ws.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var recs []workspace.JournalRecord
	if e.last == e.seq {
		var rec workspace.JournalRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("decode %s: %w", name, err)
		}
		recs = []workspace.JournalRecord{rec}
	} else {
		var b JournalBatch
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("decode %s: %w", name, err)
		}
		recs = b.Records
	}
	if int64(len(recs)) != e.last-e.seq+1 {
		return nil, fmt.Errorf("decode %s: holds %d records, want %d", name, len(recs), e.last-e.seq+1)
	}
	for i, r := range recs {
		if r.Seq != e.seq+int64(i) {
			return nil, fmt.Errorf("decode %s: record %d holds seq %d", name, i+1, r.Seq)
		}
	}
	return recs, nil
}

// journalRecords returns every record of a task's journal, in sequence
// order. Taken markers whose record is not written yet (the daemon is
// between the two steps, or crashed there) are not records and are left
// out. A record file that cannot be read is an error naming it.
func journalRecords(ws *Store, taskID string) ([]workspace.JournalRecord, error) {
	l, err := listJournal(ws, taskID)
	if err != nil {
		return nil, err
	}
	files := make([]journalEntry, 0, len(l.files))
	for _, e := range l.files {
		files = append(files, e)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].seq < files[j].seq })
	recs := make([]workspace.JournalRecord, 0, len(l.records))
	for _, e := range files {
		rs, err := readRecordFile(ws, taskID, e)
		if err != nil {
			return nil, fmt.Errorf("read journal of task %s: %w", taskID, err)
		}
		for _, r := range rs {
			// Files never overlap in a journal the daemon wrote; should
			// two hold a seq, the first one read counts.
			if len(recs) == 0 || r.Seq > recs[len(recs)-1].Seq {
				recs = append(recs, r)
			}
		}
	}
	return recs, nil
}
