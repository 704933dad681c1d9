package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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
func ReadTaskInfo(root *os.Root, id string) (TaskInfo, error) {
	dir := path.Join("tasks", id)
	info := TaskInfo{ID: id}
	status, completedAt, err := readState(root, path.Join(dir, "state.json"))
	if err != nil {
		info.StateErr = err.Error()
	} else {
		info.Status, info.CompletedAt = status, completedAt
	}
	summarized, err := isSummarized(root, dir)
	if err != nil {
		return info, err
	}
	info.Summarized = summarized
	return info, nil
}

// isSummarized reports whether dir holds nothing but summary files and dot
// entries.
func isSummarized(root *os.Root, dir string) (bool, error) {
	f, err := root.Open(dir)
	if err != nil {
		return false, fmt.Errorf("open task directory %s: %w", dir, err)
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(dirBatch)
		for _, n := range names {
			if n[0] != '.' && !isSummaryFile(n) {
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("list task directory %s: %w", dir, err)
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
