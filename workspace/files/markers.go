package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
	"golang.org/x/sys/unix"
)

func uniqueSuffix(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(now.UnixNano(), 36) + "-" + hex.EncodeToString(b[:])
}

// WriteClaim drops a .claim.<agent>.<suffix> marker. It returns the marker's
// name relative to the root.
func (w *Store) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := workspace.ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	now := w.Now()
	m := workspace.Marker{AgentID: agent, SubtaskID: subtaskID, ClaimedAt: &now, Token: workspace.TokenOf(ctx)}
	return w.writeMarker(taskID, workspace.ClaimPrefix, agent, now, m)
}

// WriteDone checks the product exists and validates, then drops a
// .done.<agent>.<suffix> marker. It returns the marker's name relative to
// the root.
func (w *Store) WriteDone(ctx context.Context, req workspace.DoneRequest) (string, error) {
	if err := w.requireTask(req.TaskID); err != nil {
		return "", err
	}
	m, kind, err := workspace.DoneMarker(req, w.Now())
	if err != nil {
		return "", err
	}
	m.Token = workspace.TokenOf(ctx)
	if kind != workspace.ProductNone {
		if err := w.ValidateProduct(ctx, req.TaskID, req.OutputFile); err != nil {
			return "", err
		}
	}
	return w.writeMarker(req.TaskID, workspace.DonePrefix, req.Agent, *m.CompletedAt, m)
}

func (w *Store) writeMarker(taskID, prefix, agent string, now time.Time, m workspace.Marker) (string, error) {
	name := path.Join(workspace.TaskDir(taskID), prefix+agent+"."+uniqueSuffix(now))
	if err := w.WriteJSON(name, m); err != nil {
		return "", err
	}
	return name, nil
}

// ReadProduct reads the file a done marker names (relative to the task
// directory) with the daemon's safety rules — a regular file inside the
// task, within the size and depth limits — and validates it against its
// schema. Errors say what is wrong in words fit for an event's reason.
func (w *Store) ReadProduct(ctx context.Context, taskID, outputFile string) (workspace.Product, error) {
	if err := w.checkTask(taskID); err != nil {
		return workspace.Product{}, err
	}
	return w.readProduct(w.root, workspace.TaskDir(taskID), outputFile)
}

// ReadProductAt is ReadProduct through dir, the task directory itself,
// open: the product and its directory are opened relative to it with one
// openat(2) each, never following a symlink. It checks and returns exactly
// what ReadProduct does; the daemon uses it for a burst of markers.
func (w *Store) ReadProductAt(dir *os.File, outputFile string) (workspace.Product, error) {
	p, err := workspace.ClassifyProduct(outputFile)
	if err != nil || p.Kind == workspace.ProductNone {
		return p, err
	}
	p, _, err = w.readProductAt(dir, outputFile, p)
	return p, err
}

// readProductAt reads outputFile, a product of kind p.Kind, through dir as
// ReadProductAt does, and also returns the bytes read.
func (w *Store) readProductAt(dir *os.File, outputFile string, p workspace.Product) (workspace.Product, []byte, error) {
	data, err := w.ReadProductFileAt(dir, outputFile)
	if err != nil {
		return workspace.Product{}, nil, err
	}
	p, err = w.decodeProduct(p, outputFile, data)
	return p, data, err
}

// ReadProductFileAt reads the bytes of outputFile (named relative to the
// task) through dir, the task directory, open, by ReadProductAt's safety
// rules — a regular file inside the task within the size limit, opened
// with one openat(2) a component, never through a symlink — without
// decoding them. A missing file is ErrNotFound, one that can never be
// read safely ErrUnsafe.
func (w *Store) ReadProductFileAt(dir *os.File, outputFile string) ([]byte, error) {
	from := dir
	sub, file := path.Split(outputFile)
	if sub != "" {
		sub = strings.TrimSuffix(sub, "/")
		d, err := agentfile.OpenDirAt(dir, sub)
		if err != nil {
			if errors.Is(err, workspace.ErrUnsafe) {
				what := "not a directory"
				var st unix.Stat_t
				if unix.Fstatat(int(dir.Fd()), sub, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					what = workspace.FileKind(modeOf(uint32(st.Mode)))
				}
				return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "product " + outputFile, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", sub, what)}
			}
			return nil, productReadError(outputFile, err)
		}
		defer d.Close()
		from = d
	}
	data, err := agentfile.ReadAt(from, file, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return nil, productReadError(outputFile, err)
	}
	return data, nil
}

// modeOf is the type bits of a stat(2) mode as an fs.FileMode.
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFREG:
		return 0
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// productReadError says why a product could not be read.
func productReadError(outputFile string, err error) error {
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.NotFoundf("product "+outputFile, "write the product before dropping the marker", "output file %s does not exist", outputFile)
	}
	return err
}

// readProduct reads outputFile of the task directory dir of root.
func (w *Store) readProduct(root *os.Root, dir, outputFile string) (workspace.Product, error) {
	p, err := workspace.ClassifyProduct(outputFile)
	if err != nil || p.Kind == workspace.ProductNone {
		return p, err
	}
	name := path.Join(dir, outputFile)
	// The product must be inside its own task: a symlinked outputs/ or
	// reviews/ directory could lead to another task's files.
	if d := path.Dir(outputFile); d != "." {
		if st, err := root.Lstat(path.Join(dir, d)); err == nil && !st.IsDir() {
			return workspace.Product{}, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "product " + outputFile, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", d, workspace.FileKind(st.Mode()))}
		}
	}
	data, err := agentfile.Read(root, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return workspace.Product{}, productReadError(outputFile, err)
	}
	return w.decodeProduct(p, outputFile, data)
}

// decodeProduct checks and decodes data, the content of outputFile, into p
// (whose Kind and ID are set).
func (w *Store) decodeProduct(p workspace.Product, outputFile string, data []byte) (workspace.Product, error) {
	return workspace.DecodeProductWithin(p, outputFile, data, w.settings.Limits.MaxDepth)
}

// ValidateProduct checks a product like ReadProduct, discarding it.
func (w *Store) ValidateProduct(ctx context.Context, taskID, outputFile string) error {
	_, err := w.ReadProduct(ctx, taskID, outputFile)
	return err
}
