package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// manifestReader reads the manifest part of entry files in one directory,
// reusing its buffers from file to file. It opens each name with openat(2)
// and O_NOFOLLOW relative to the directory's descriptor: names come from
// the directory listing and hold no '/', so this stays inside the
// directory and never follows a symlink, with no extra lstat per file.
type manifestReader struct {
	dirFd    int
	dir      string // the directory's absolute path (for systems without openat)
	fd       int    // the file being read
	maxBytes int64
	maxDepth int
	buf      []byte // the head of the current file
	obj      []byte // the head cut just before "value" and closed with '}'
}

// manifestFields is what the manifest needs from an entry, decoded from
// the head of the file.
type manifestFields struct {
	Key              string    `json:"key"`
	ShortDescription string    `json:"short_description"`
	StoredBy         string    `json:"stored_by"`
	UpdatedAt        time.Time `json:"updated_at"`
	Version          int       `json:"version"`
}

// manifestHead is how much of a file is read first: canonical entries
// have all their manifest fields well within it.
const manifestHead = 4096

// read returns the manifest item of one entry file. It reads the file
// only up to the top-level "value" field; a file whose manifest fields do
// not all come before the value is parsed whole.
func (r *manifestReader) read(name string) (workspace.ManifestItem, error) {
	fd, err := openEntryAt(r.dirFd, r.dir, name)
	if err != nil {
		if err == syscall.ELOOP {
			return workspace.ManifestItem{}, errors.New("is a symlink; entries must be regular files")
		}
		return workspace.ManifestItem{}, fmt.Errorf("open: %w", err)
	}
	defer syscall.Close(fd)
	r.fd = fd
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return workspace.ManifestItem{}, fmt.Errorf("stat: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return workspace.ManifestItem{}, errors.New("is not a regular file")
	}
	if st.Size > r.maxBytes {
		return workspace.ManifestItem{}, fmt.Errorf("is %d bytes, over the %d-byte limit", st.Size, r.maxBytes)
	}
	// Read the head; read on while "value" has not been met.
	want := int(min(st.Size, manifestHead))
	n := 0
	for {
		if cap(r.buf) < want {
			r.buf = append(r.buf[:n], make([]byte, want-n)...)
		}
		r.buf = r.buf[:want]
		for n < want {
			m, err := syscall.Pread(fd, r.buf[n:want], int64(n))
			if err != nil {
				return workspace.ManifestItem{}, fmt.Errorf("read: %w", err)
			}
			if m == 0 {
				break // the file shrank; scan what there is
			}
			n += m
		}
		r.buf = r.buf[:n]
		names, pos := scanTopLevel(r.buf, "value")
		if pos >= 0 {
			return r.fromHead(name, names, pos, st.Size)
		}
		if n < want || int64(n) >= st.Size {
			break // the whole file, and no top-level "value" field
		}
		want = int(min(st.Size, int64(n)*4))
	}
	return r.whole(name, r.buf, st.Size)
}

// fromHead decodes the manifest from the bytes before the "value" field
// (which starts at pos), falling back to a full parse when they do not
// hold every manifest field.
func (r *manifestReader) fromHead(name string, names []string, pos int, size int64) (workspace.ManifestItem, error) {
	head := bytes.TrimRight(r.buf[:pos], " \t\r\n")
	if len(head) == 0 || (head[len(head)-1] != ',' && head[len(head)-1] != '{') {
		return workspace.ManifestItem{}, errors.New("invalid JSON before the value field")
	}
	seen := map[string]bool{}
	for _, f := range names {
		if err := checkEntryField(f, seen); err != nil {
			return workspace.ManifestItem{}, err
		}
	}
	if !seen["key"] || !seen["short_description"] || !seen["stored_by"] || !seen["updated_at"] || !seen["version"] {
		// Another field order: parse the whole file.
		data, err := r.readAll(size)
		if err != nil {
			return workspace.ManifestItem{}, err
		}
		return r.whole(name, data, size)
	}
	r.obj = append(append(r.obj[:0], bytes.TrimSuffix(head, []byte(","))...), '}')
	if err := workspace.CheckDepth(r.obj, r.maxDepth); err != nil {
		return workspace.ManifestItem{}, err
	}
	var m manifestFields
	if err := json.Unmarshal(r.obj, &m); err != nil {
		return workspace.ManifestItem{}, workspace.DescribeJSONError(r.obj, err)
	}
	return workspace.ManifestItem{Key: m.Key, ShortDescription: m.ShortDescription, StoredBy: m.StoredBy, UpdatedAt: m.UpdatedAt, Version: m.Version, Size: size}, nil
}

func (r *manifestReader) readAll(size int64) ([]byte, error) {
	data := make([]byte, size)
	n := 0
	for n < len(data) {
		m, err := syscall.Pread(r.fd, data[n:], int64(n))
		if err != nil {
			return nil, fmt.Errorf("read: %w", err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return data[:n], nil
}

func (r *manifestReader) whole(name string, data []byte, size int64) (workspace.ManifestItem, error) {
	e, err := parseEntry(name, data, r.maxDepth)
	if err != nil {
		return workspace.ManifestItem{}, err
	}
	return workspace.ManifestItem{Key: e.Key, ShortDescription: e.ShortDescription, StoredBy: e.StoredBy, UpdatedAt: e.UpdatedAt, Version: e.Version, Size: size}, nil
}

// entryFields are the top-level fields of an entry file as written.
var entryFields = []string{"key", "short_description", "stored_by", "created_at", "updated_at", "version", "value"}

// checkEntryField refuses a top-level field that would make the streamed
// manifest and a whole-file parse disagree: an entry field given twice
// (the streamed reader stops at the first, a full parse keeps the last) or
// spelled in another case (encoding/json matches it, the streamed reader
// does not). seen collects the entry fields met so far.
func checkEntryField(field string, seen map[string]bool) error {
	for _, f := range entryFields {
		if field == f {
			if seen[f] {
				return fmt.Errorf("field %q appears twice", f)
			}
			seen[f] = true
			return nil
		}
		if strings.EqualFold(field, f) {
			return fmt.Errorf("field %q: entries spell it %q", field, f)
		}
	}
	return nil
}

// entryDepth is how deep an entry file may nest when its value may nest
// maxDepth levels: the entry's own object is one level more, so a value
// at the limit, accepted by a write, reads back.
func entryDepth(maxDepth int) int { return maxDepth + 1 }

// parseEntry decodes a whole entry file with the same field rules as the
// streamed manifest reader, so both read the same entry from one file.
func parseEntry(name string, data []byte, maxDepth int) (workspace.Entry, error) {
	var e workspace.Entry
	if err := workspace.DecodeStrict(name, data, maxDepth, &e); err != nil {
		return workspace.Entry{}, err
	}
	seen := map[string]bool{}
	for _, f := range topLevelFields(data) {
		if err := checkEntryField(f, seen); err != nil {
			return workspace.Entry{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parse " + name, Err: err}
		}
	}
	return e, nil
}

// topLevelFields lists the field names of the top-level object of data,
// which must already be known to be valid JSON.
func topLevelFields(data []byte) []string {
	names, _ := scanTopLevel(data, "")
	return names
}

// scanTopLevel scans the top-level object at the start of data (bytes
// only, values skipped, names unescaped only when they hold escapes) and
// returns the field names met. When it meets the field stop, complete and
// followed by its ':', it returns the names before it and the offset of
// its opening quote; otherwise pos is -1 (stop not there, or data cut
// short, or not an object).
func scanTopLevel(data []byte, stop string) (names []string, pos int) {
	depth, expectKey := 0, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j, esc := i+1, false
			for ; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					esc = true
					j++
				}
			}
			if j >= len(data) {
				return names, -1 // a string cut short
			}
			if depth == 1 && expectKey {
				name := string(data[i+1 : j])
				if esc {
					_ = json.Unmarshal(data[i:j+1], &name)
				}
				if stop != "" && name == stop {
					k := j + 1
					for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\r' || data[k] == '\n') {
						k++
					}
					if k < len(data) && data[k] == ':' {
						return names, i
					}
					return names, -1
				}
				names = append(names, name)
				expectKey = false
			}
			i = j
		case '{':
			depth++
			expectKey = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		case ' ', '\t', '\r', '\n':
		default:
			if depth == 0 {
				return names, -1 // not an object
			}
		}
	}
	return names, -1
}
