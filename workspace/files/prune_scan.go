package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/workspaced/workspaced/retention"
)

// Reading bounds, the same as every reader of agent files in the
// workspace: no file over 16 MiB and no JSON nested deeper than 64 levels
// is read.
const (
	// MaxStateBytes is the largest state.json ReadTaskInfo reads.
	MaxStateBytes = 16 << 20
	// MaxStateDepth is the deepest nesting ReadTaskInfo accepts in
	// state.json.
	MaxStateDepth = 64
	// dirBatch is how many directory entries are read at a time, so
	// memory stays flat however many entries a directory holds.
	dirBatch = 256
)

// summaryFiles are the files a summarised task keeps: its definition, its
// final state and its events.
var summaryFiles = [...]string{"task.json", "state.json", "events.log"}

func isSummaryFile(name string) bool {
	for _, f := range summaryFiles {
		if name == f {
			return true
		}
	}
	return false
}

// ReadTaskInfo reads what the policy needs about tasks/<id> under root:
// state.json's status and completed_at, and whether the directory is
// already summarised. It reads state.json as a token stream with bounded
// size (MaxStateBytes) and depth (MaxStateDepth), keeping only those two
// fields, and lists the directory in batches, stopping at the first entry
// a summary would not keep. A state.json that is missing leaves Status
// empty; one that is unreadable, not a regular file, oversized, deeper than
// MaxStateDepth, not a JSON object or without a string status sets
// StateErr. The error is for a task directory that cannot be listed.
func ReadTaskInfo(root *os.Root, id string) (retention.TaskInfo, error) {
	dir := path.Join("tasks", id)
	info := retention.TaskInfo{ID: id}
	status, completedAt, err := readState(root, path.Join(dir, "state.json"))
	if err != nil {
		info.StateErr = err.Error()
	} else {
		info.Status, info.CompletedAt = status, completedAt
	}
	summarized, locksOnly, err := listTaskDir(root, dir)
	if err != nil {
		return info, err
	}
	info.Summarized = summarized
	if locksOnly {
		if info.LocksOnly, err = onlyLockFiles(root, path.Join(dir, ".locks")); err != nil {
			return info, err
		}
	}
	return info, nil
}

// listTaskDir reports whether dir holds nothing but summary files and dot
// entries (summarized), and whether it holds nothing but .locks
// (locksOnly). It stops at the first entry that settles both.
func listTaskDir(root *os.Root, dir string) (summarized, locksOnly bool, err error) {
	f, err := root.Open(dir)
	if err != nil {
		return false, false, fmt.Errorf("open task directory %s: %w", dir, err)
	}
	defer f.Close()
	seen, locks := 0, false
	for {
		names, err := f.Readdirnames(dirBatch)
		for _, n := range names {
			if n[0] != '.' && !isSummaryFile(n) {
				return false, false, nil
			}
			seen++
			locks = locks || n == ".locks"
		}
		if err == io.EOF {
			return true, locks && seen == 1, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("list task directory %s: %w", dir, err)
		}
	}
}

// maxLockFiles bounds the lock files of a directory holding nothing but
// locks that the Pruner takes at once; a directory with more is left
// alone (each lock taken holds a descriptor).
const maxLockFiles = 64

// onlyLockFiles reports whether locks (a task's .locks) is a directory
// holding nothing but regular files, at most maxLockFiles of them.
func onlyLockFiles(root *os.Root, locks string) (bool, error) {
	fi, err := root.Lstat(locks)
	if err != nil || !fi.IsDir() {
		return false, nil
	}
	names, ok, err := lockFiles(root, locks)
	return ok && len(names) <= maxLockFiles, err
}

// lockFiles lists locks, a .locks directory: the names of its entries,
// and whether every one is a regular file. It reads at most
// maxLockFiles+1 names.
func lockFiles(root *os.Root, locks string) ([]string, bool, error) {
	f, err := root.Open(locks)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", locks, err)
	}
	defer f.Close()
	var names []string
	for {
		batch, err := f.ReadDir(dirBatch)
		for _, e := range batch {
			if !e.Type().IsRegular() {
				return nil, false, nil
			}
			names = append(names, e.Name())
			if len(names) > maxLockFiles {
				return names, true, nil
			}
		}
		if err == io.EOF {
			return names, true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("list %s: %w", locks, err)
		}
	}
}

// readState returns state.json's status and completed_at ("" for a missing
// or null completed_at). A missing file gives "", "", nil.
func readState(root *os.Root, name string) (status, completedAt string, err error) {
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > MaxStateBytes {
		return "", "", fmt.Errorf("%d bytes, over the %d-byte limit", fi.Size(), MaxStateBytes)
	}
	f, err := root.Open(name)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	// The limit also holds if the file grows after Lstat; a cut-off
	// document then fails to decode.
	dec := json.NewDecoder(io.LimitReader(f, MaxStateBytes))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return "", "", err
	}
	haveStatus := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "", err
		}
		key, _ := tok.(string)
		switch key {
		case "status":
			tok, err := dec.Token()
			if err != nil {
				return "", "", err
			}
			s, ok := tok.(string)
			if !ok {
				return "", "", fmt.Errorf("status is %s, not a string", describe(tok))
			}
			status, haveStatus = s, true
		case "completed_at":
			tok, err := dec.Token()
			if err != nil {
				return "", "", err
			}
			switch v := tok.(type) {
			case nil:
				completedAt = ""
			case string:
				completedAt = v
			default:
				return "", "", fmt.Errorf("completed_at is %s, not a string", describe(tok))
			}
		default:
			if err := skipValue(dec, 1); err != nil {
				return "", "", err
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return "", "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", "", errors.New("trailing data after the JSON object")
	}
	if !haveStatus {
		return "", "", errors.New("no status field")
	}
	return status, completedAt, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		if want == '{' {
			return fmt.Errorf("not a JSON object (starts with %s)", describe(tok))
		}
		return fmt.Errorf("expected %q, found %s", want, describe(tok))
	}
	return nil
}

// skipValue consumes one JSON value whose container sits at depth,
// refusing nesting deeper than MaxStateDepth.
func skipValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > MaxStateDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxStateDepth)
	}
	for dec.More() {
		if d == '{' {
			if _, err := dec.Token(); err != nil { // the key
				return err
			}
		}
		if err := skipValue(dec, depth+1); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", tok)
}
