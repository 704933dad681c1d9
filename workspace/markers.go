package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/schemas"
)

// Marker file name prefixes.
const (
	ClaimPrefix = ".claim."
	DonePrefix  = ".done."
)

// Product kinds a done marker can point at.
const (
	ProductPlan   = "plan"
	ProductReview = "review"
	ProductOutput = "output"
	ProductNone   = "none" // a cancel marker
)

// ClassifyOutput says what a done marker's output_file names: "plan.json",
// "reviews/<id>.json" or "outputs/<id>.json" (relative to the task
// directory). Anything else — an absolute path, "..", a deeper path — is
// refused, so a marker cannot point outside its task.
func ClassifyOutput(outputFile string) (kind, id string, err error) {
	if outputFile == "" {
		return ProductNone, "", nil
	}
	if outputFile == "plan.json" {
		return ProductPlan, "", nil
	}
	dir, file := path.Split(outputFile)
	base, ok := strings.CutSuffix(file, ".json")
	if !ok || ValidateID("file name", base) != nil {
		return "", "", fmt.Errorf("output_file %q is not plan.json, reviews/<id>.json or outputs/<id>.json", outputFile)
	}
	switch dir {
	case "reviews/":
		return ProductReview, base, nil
	case "outputs/":
		return ProductOutput, base, nil
	}
	return "", "", fmt.Errorf("output_file %q is not plan.json, reviews/<id>.json or outputs/<id>.json", outputFile)
}

// IsMarkerName reports whether a file name in a task directory is a claim or
// done marker (and which).
func IsMarkerName(name string) (kind string, ok bool) {
	switch {
	case strings.HasPrefix(name, ClaimPrefix) && len(name) > len(ClaimPrefix):
		return KindClaim, true
	case strings.HasPrefix(name, DonePrefix) && len(name) > len(DonePrefix):
		return KindDone, true
	}
	return "", false
}

func uniqueSuffix(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(now.UnixNano(), 36) + "-" + hex.EncodeToString(b[:])
}

// WriteClaim drops a .claim.<agent>.<suffix> marker. It returns the marker's
// name relative to the root.
func (w *Workspace) WriteClaim(ctx context.Context, taskID, agent, subtaskID string) (string, error) {
	if err := w.requireTask(taskID); err != nil {
		return "", err
	}
	if err := ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ValidateID("subtask id", subtaskID); err != nil {
		return "", err
	}
	now := w.Now()
	m := Marker{AgentID: agent, SubtaskID: subtaskID, ClaimedAt: &now}
	return w.writeMarker(taskID, ClaimPrefix, agent, now, m)
}

// DoneRequest is what `done` takes.
type DoneRequest struct {
	TaskID     string
	Agent      string
	OutputFile string // relative to the task directory
	SubtaskID  string
	Status     string // completed (default) | failed | cancelled
	Error      string
	Escalate   string
}

// WriteDone checks the product exists and validates, then drops a
// .done.<agent>.<suffix> marker. It returns the marker's name relative to
// the root.
func (w *Workspace) WriteDone(ctx context.Context, req DoneRequest) (string, error) {
	if err := w.requireTask(req.TaskID); err != nil {
		return "", err
	}
	m, kind, err := DoneMarker(req, w.Now())
	if err != nil {
		return "", err
	}
	if kind != ProductNone {
		if err := w.ValidateProduct(ctx, req.TaskID, req.OutputFile); err != nil {
			return "", err
		}
	}
	return w.writeMarker(req.TaskID, DonePrefix, req.Agent, *m.CompletedAt, m)
}

// DoneMarker checks req and builds the done marker it drops at time now,
// with the kind of product it names (ProductNone for none); the product
// itself is for the caller to validate. Every backend drops done markers
// with it.
func DoneMarker(req DoneRequest, now time.Time) (Marker, string, error) {
	if err := ValidateID("agent", req.Agent); err != nil {
		return Marker{}, "", err
	}
	switch req.Status {
	case "", "completed", "failed", "cancelled":
	default:
		return Marker{}, "", fieldErr(ErrInvalid, "done", FieldStatus, "use completed, failed or cancelled", "unknown status %q", req.Status)
	}
	if req.Status == "failed" && req.Error == "" {
		return Marker{}, "", fieldErr(ErrInvalid, "done", FieldError, "say why the work failed", "a failed marker needs an error")
	}
	kind, id, err := ClassifyOutput(req.OutputFile)
	if err != nil {
		return Marker{}, "", fieldErr(ErrInvalid, "done", FieldOutputFile, "name the product by its place in the task directory: plan.json, reviews/<id>.json or outputs/<id>.json", "%v", err)
	}
	if kind == ProductNone && req.Status != "cancelled" {
		return Marker{}, "", fieldErr(ErrInvalid, "done", FieldOutputFile, "name the product: plan.json, reviews/<id>.json or outputs/<id>.json", "no output named")
	}
	if kind == ProductOutput {
		if req.SubtaskID == "" {
			req.SubtaskID = id
		}
		if err := ValidateID("subtask id", req.SubtaskID); err != nil {
			return Marker{}, "", err
		}
		if req.SubtaskID != id {
			return Marker{}, "", fieldErr(ErrInvalid, "done", FieldOutputFile, "name the subtask's own output, outputs/"+req.SubtaskID+".json",
				"the marker names subtask %s, but %s is subtask %s's output", req.SubtaskID, req.OutputFile, id)
		}
	}
	m := Marker{AgentID: req.Agent, SubtaskID: req.SubtaskID, OutputFile: req.OutputFile, Status: req.Status,
		Error: req.Error, Escalate: req.Escalate, CompletedAt: &now}
	if m.Status == "" {
		m.Status = "completed"
	}
	return m, kind, nil

}

func (w *Workspace) writeMarker(taskID, prefix, agent string, now time.Time, m Marker) (string, error) {
	name := path.Join(TaskDir(taskID), prefix+agent+"."+uniqueSuffix(now))
	if err := w.WriteJSON(name, m); err != nil {
		return "", err
	}
	return name, nil
}

// Product is what a done marker points at, read and validated.
type Product struct {
	Kind   string // ProductPlan | ProductReview | ProductOutput | ProductNone
	ID     string // review or subtask id from the file name
	Plan   *Plan
	Review *Review
	Output *Output
}

// ReadProduct reads the file a done marker names (relative to the task
// directory) with the daemon's safety rules — a regular file inside the
// task, within the size and depth limits — and validates it against its
// schema. Errors say what is wrong in words fit for an event's reason.
func (w *Workspace) ReadProduct(ctx context.Context, taskID, outputFile string) (Product, error) {
	if err := w.checkTask(taskID); err != nil {
		return Product{}, err
	}
	return w.readProduct(w.root, TaskDir(taskID), outputFile)
}

// ReadProductAt is ReadProduct through dir, the task directory itself,
// open: the product and its directory are opened relative to it with one
// openat(2) each, never following a symlink. It checks and returns exactly
// what ReadProduct does; the daemon uses it for a burst of markers.
func (w *Workspace) ReadProductAt(dir *os.File, outputFile string) (Product, error) {
	p, err := classifyProduct(outputFile)
	if err != nil || p.Kind == ProductNone {
		return p, err
	}
	p, _, err = w.readProductAt(dir, outputFile, p)
	return p, err
}

// readProductAt reads outputFile, a product of kind p.Kind, through dir as
// ReadProductAt does, and also returns the bytes read.
func (w *Workspace) readProductAt(dir *os.File, outputFile string, p Product) (Product, []byte, error) {
	data, err := w.ReadProductFileAt(dir, outputFile)
	if err != nil {
		return Product{}, nil, err
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
func (w *Workspace) ReadProductFileAt(dir *os.File, outputFile string) ([]byte, error) {
	from := dir
	sub, file := path.Split(outputFile)
	if sub != "" {
		sub = strings.TrimSuffix(sub, "/")
		d, err := OpenDirAt(dir, sub)
		if err != nil {
			if errors.Is(err, ErrUnsafe) {
				what := "not a directory"
				var st unix.Stat_t
				if unix.Fstatat(int(dir.Fd()), sub, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					what = FileKind(modeOf(uint32(st.Mode)))
				}
				return nil, &Error{Kind: ErrUnsafe, Op: "product " + outputFile, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", sub, what)}
			}
			return nil, productReadError(outputFile, err)
		}
		defer d.Close()
		from = d
	}
	data, err := ReadAgentFileAt(from, file, int64(w.settings.Limits.MaxFileBytes))
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
	if errors.Is(err, ErrNotFound) {
		return notFoundf("product "+outputFile, "write the product before dropping the marker", "output file %s does not exist", outputFile)
	}
	return err
}

// classifyProduct is the product outputFile names, not yet read: its kind
// and id, or an error when the name is no product's.
func classifyProduct(outputFile string) (Product, error) {
	kind, id, err := ClassifyOutput(outputFile)
	if err != nil {
		return Product{}, invalidf("product", "", "%v", err)
	}
	return Product{Kind: kind, ID: id}, nil
}

// readProduct reads outputFile of the task directory dir of root.
func (w *Workspace) readProduct(root *os.Root, dir, outputFile string) (Product, error) {
	p, err := classifyProduct(outputFile)
	if err != nil || p.Kind == ProductNone {
		return p, err
	}
	name := path.Join(dir, outputFile)
	// The product must be inside its own task: a symlinked outputs/ or
	// reviews/ directory could lead to another task's files.
	if d := path.Dir(outputFile); d != "." {
		if st, err := root.Lstat(path.Join(dir, d)); err == nil && !st.IsDir() {
			return Product{}, &Error{Kind: ErrUnsafe, Op: "product " + outputFile, Msg: fmt.Sprintf("%s/ is a %s, not a directory of the task", d, FileKind(st.Mode()))}
		}
	}
	data, err := ReadAgentFile(root, name, int64(w.settings.Limits.MaxFileBytes))
	if err != nil {
		return Product{}, productReadError(outputFile, err)
	}
	return w.decodeProduct(p, outputFile, data)
}

// decodeProduct checks and decodes data, the content of outputFile, into p
// (whose Kind and ID are set).
func (w *Workspace) decodeProduct(p Product, outputFile string, data []byte) (Product, error) {
	return decodeProductWithin(p, outputFile, data, w.settings.Limits.MaxDepth)
}

// decodeProductWithin checks and decodes data, the content of outputFile,
// into p (whose Kind and ID are set), nested no deeper than maxDepth.
func decodeProductWithin(p Product, outputFile string, data []byte, maxDepth int) (Product, error) {
	if err := CheckDepth(data, maxDepth); err != nil {
		return Product{}, err
	}
	var sk schemas.Kind
	var dst any
	switch p.Kind {
	case ProductPlan:
		sk, p.Plan = schemas.KindPlan, &Plan{}
		dst = p.Plan
	case ProductReview:
		sk, p.Review = schemas.KindReview, &Review{}
		dst = p.Review
	case ProductOutput:
		sk, p.Output = schemas.KindOutput, &Output{}
		dst = p.Output
	}
	if err := schemas.Validate(sk, data); err != nil {
		return Product{}, &Error{Kind: ErrInvalid, Op: "product " + outputFile, Msg: "does not match its schema", Err: err}
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return Product{}, &Error{Kind: ErrInvalid, Op: "product " + outputFile, Err: err}
	}
	if p.Plan != nil {
		if err := checkPlan(*p.Plan); err != nil {
			return Product{}, err
		}
	}
	if p.Output != nil && p.Output.SubtaskID != p.ID {
		return Product{}, invalidf("product "+outputFile, "", "holds subtask_id %q, not %q", p.Output.SubtaskID, p.ID)
	}
	return p, nil
}

// ValidateProduct checks a product like ReadProduct, discarding it.
func (w *Workspace) ValidateProduct(ctx context.Context, taskID, outputFile string) error {
	_, err := w.ReadProduct(ctx, taskID, outputFile)
	return err
}
