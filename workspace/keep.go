package workspace

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// HistoryDir is the directory, inside outputs/ and reviews/, that keeps
// the versions a product replaced.
const HistoryDir = "history"

// EntryHistoryDir is the directory, inside a memory scope's directory
// (memory/global/, memory/agents/<agent>/), that keeps the earlier
// versions of its entries (EntryHistory): .history/<key file name>/, one
// file a version, named by EntryHistoryName.
const EntryHistoryDir = ".history"

// EntryHistoryName is the file name of e's kept version in its key's
// history directory: <updated_at in ms, 13 digits>-<version, 6 digits>.json,
// so that the names sort oldest first.
func EntryHistoryName(e Entry) string {
	return fmt.Sprintf("%013d-%06d.json", e.UpdatedAt.UnixMilli(), e.Version)
}

// IsEntryHistoryName says whether name is a file name EntryHistoryName
// gives.
func IsEntryHistoryName(name string) bool {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok || len(base) != 20 || base[13] != '-' {
		return false
	}
	return strings.Trim(base[:13]+base[14:], "0123456789") == ""
}

// subtaskCompleted is a subtask's status once its work is done, in the
// state machine's words (package machine imports this one).
const subtaskCompleted = "completed"

// HistoryName is the path, relative to the task directory, of version n
// of the product id kept in dir ("outputs", "reviews"):
// outputs/history/st_3.v1.json.
func HistoryName(dir, id string, n int) string {
	return path.Join(dir, HistoryDir, id+".v"+strconv.Itoa(n)+".json")
}

// HistoryVersion reads a name of a history directory back: the product's
// id and the version, or ok false for any other name.
func HistoryVersion(name string) (id string, n int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return "", 0, false
	}
	i := strings.LastIndex(base, ".v")
	if i <= 0 {
		return "", 0, false
	}
	digits := base[i+2:]
	if digits == "" || strings.Trim(digits, "0123456789") != "" || digits[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || ValidateID("product id", base[:i]) != nil {
		return "", 0, false
	}
	return base[:i], n, true
}

// finalErr is the conflict of writing a product that is final.
func finalErr(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrConflict, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// OutputFinal is the conflict of replacing the output rel of subtask
// subtaskID when it is final: the state (nil before the first) has the
// subtask completed, or a done marker waiting reports it completed. nil
// when it may be replaced. Every backend decides with it.
func OutputFinal(subtaskID, rel string, st *State, waiting []WaitingDone) error {
	op := "write output " + rel
	if st != nil {
		if ss := st.Subtasks[subtaskID]; ss != nil && ss.Status == subtaskCompleted {
			who := ""
			if ss.Worker != "" {
				who = " by " + ss.Worker
			}
			return finalErr(op, "a finished subtask's output is final; only a checkpoint review asking for revision sends the subtask back, and then its output may be written again",
				"subtask %s was completed%s; its output is final", subtaskID, who)
		}
		for _, id := range slices.Sorted(maps.Keys(st.Subtasks)) {
			if ss := st.Subtasks[id]; ss != nil && ss.Status == subtaskCompleted && ss.Output == rel {
				return finalErr(op, "a finished subtask's output is final", "subtask %s was completed with %s; it is final", id, rel)
			}
		}
	}
	for _, m := range waiting {
		if m.Marker.OutputFile == rel && (m.Marker.Status == "" || m.Marker.Status == "completed") {
			return finalErr(op, "wait for the daemon to apply it; if it refuses the marker, write again",
				"done marker %s reports it completed and waits for the daemon", m.Name)
		}
	}
	return nil
}

// ReviewFinal is the conflict of replacing the review rel once a done
// marker reported it: one of waiting names it, or the journal record seq
// (0 for none) took it without rejecting it. Every backend decides with
// it.
func ReviewFinal(rel string, waiting []WaitingDone, seq int64) error {
	op := "write review " + rel
	hint := "a reported review is final; write the new decision as a review with a new id, and report that one"
	for _, m := range waiting {
		if m.Marker.OutputFile == rel {
			return finalErr(op, hint, "done marker %s reported it and waits for the daemon", m.Name)
		}
	}
	if seq > 0 {
		return finalErr(op, hint, "it was reported (journal record %d)", seq)
	}
	return nil
}

// WaitingDone is a done marker waiting for the daemon: its name and
// what it says.
type WaitingDone struct {
	Name   string
	Marker Marker
}
