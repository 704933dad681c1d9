package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// The journal of a task is its directory journal/. It holds two kinds of
// names:
//
//	000000000007.json                      the record of seq 7 (JournalRecord)
//	000000000007.taken.done.worker_1.x1    marker .done.worker_1.x1, taken as seq 7,
//	                                       whose record is not written yet
//
// Taking a marker is a rename of the marker file itself into journal/ under
// the second name: the rename is the commit point (a marker is either still
// in the task directory or in the journal, never both and never neither),
// and the name keeps both the sequence number and the marker's original
// name. The record is then written atomically and durably beside it, and
// only then is the taken file removed. After a crash at any point:
//
//   - a taken file with no record: the record is written from the taken
//     file on start (its taken_at is the recovery time);
//   - a taken file with its record: the taken file is just removed;
//   - a record past state.json's journal_seq: it is applied on start.
//
// So every marker gets exactly one record and every record is applied once.

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

// takenName is the name of a marker taken as seq, inside journal/.
func takenName(seq int64, marker string) string {
	return fmt.Sprintf("%0*d%s%s", seqWidth, seq, takenInfix, marker)
}

// journalEntry is one name of a journal directory, parsed.
type journalEntry struct {
	seq    int64
	name   string
	marker string // set for a taken marker: its original name
}

// parseJournalName reads a journal file name back. ok is false for names
// that are neither a record nor a taken marker (temporary dot-files, or
// anything a person left there).
func parseJournalName(name string) (journalEntry, bool) {
	if len(name) < seqWidth+1 {
		return journalEntry{}, false
	}
	digits, rest := name[:seqWidth], name[seqWidth:]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return journalEntry{}, false
		}
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq <= 0 {
		return journalEntry{}, false
	}
	if rest == ".json" {
		return journalEntry{seq: seq, name: name}, true
	}
	if m, ok := strings.CutPrefix(rest, takenInfix); ok {
		if _, isMarker := workspace.IsMarkerName(m); isMarker {
			return journalEntry{seq: seq, name: name, marker: m}, true
		}
	}
	return journalEntry{}, false
}

// journalListing is what a journal directory holds.
type journalListing struct {
	records map[int64]string       // seq → record name
	taken   map[int64]journalEntry // seq → taken marker without... (any)
	temps   []string               // dot-files: leftovers of an interrupted write
	maxSeq  int64
}

// listJournal lists a task's journal directory. A missing directory is an
// empty journal.
func listJournal(ws *workspace.Workspace, taskID string) (journalListing, error) {
	l := journalListing{records: map[int64]string{}, taken: map[int64]journalEntry{}}
	dir := path.Join(workspace.TaskDir(taskID), JournalDir)
	f, err := ws.Root().Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("list journal of task %s: %w", taskID, err)
	}
	defer f.Close()
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
				l.records[e.seq] = e.name
			}
			l.maxSeq = max(l.maxSeq, e.seq)
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

// readRecord reads and decodes the journal record of seq.
func readRecord(ws *workspace.Workspace, taskID string, seq int64) (workspace.JournalRecord, error) {
	name := path.Join(workspace.TaskDir(taskID), JournalDir, RecordName(seq))
	data, err := ws.ReadFile(name)
	if err != nil {
		return workspace.JournalRecord{}, err
	}
	var rec workspace.JournalRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return workspace.JournalRecord{}, fmt.Errorf("decode %s: %w", name, err)
	}
	if rec.Seq != seq {
		return workspace.JournalRecord{}, fmt.Errorf("decode %s: holds seq %d", name, rec.Seq)
	}
	return rec, nil
}

// ReadJournal returns every record of a task's journal, in sequence
// order. Taken markers whose record is not written yet (the daemon is
// between the two steps, or crashed there) are not records and are left
// out. A record that cannot be read is an error naming it.
func ReadJournal(ws *workspace.Workspace, taskID string) ([]workspace.JournalRecord, error) {
	l, err := listJournal(ws, taskID)
	if err != nil {
		return nil, err
	}
	seqs := make([]int64, 0, len(l.records))
	for s := range l.records {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	recs := make([]workspace.JournalRecord, 0, len(seqs))
	for _, s := range seqs {
		rec, err := readRecord(ws, taskID, s)
		if err != nil {
			return nil, fmt.Errorf("read journal of task %s: %w", taskID, err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}
