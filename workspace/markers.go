package workspace

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

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
		return Marker{}, "", FieldErr(ErrInvalid, "done", FieldStatus, "use completed, failed or cancelled", "unknown status %q", req.Status)
	}
	if req.Status == "failed" && req.Error == "" {
		return Marker{}, "", FieldErr(ErrInvalid, "done", FieldError, "say why the work failed", "a failed marker needs an error")
	}
	kind, id, err := ClassifyOutput(req.OutputFile)
	if err != nil {
		return Marker{}, "", FieldErr(ErrInvalid, "done", FieldOutputFile, "name the product by its place in the task directory: plan.json, reviews/<id>.json or outputs/<id>.json", "%v", err)
	}
	if kind == ProductNone && req.Status != "cancelled" {
		return Marker{}, "", FieldErr(ErrInvalid, "done", FieldOutputFile, "name the product: plan.json, reviews/<id>.json or outputs/<id>.json", "no output named")
	}
	if kind == ProductOutput {
		if req.SubtaskID == "" {
			req.SubtaskID = id
		}
		if err := ValidateID("subtask id", req.SubtaskID); err != nil {
			return Marker{}, "", err
		}
		if req.SubtaskID != id {
			return Marker{}, "", FieldErr(ErrInvalid, "done", FieldOutputFile, "name the subtask's own output, outputs/"+req.SubtaskID+".json",
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

// Product is what a done marker points at, read and validated.
type Product struct {
	Kind   string // ProductPlan | ProductReview | ProductOutput | ProductNone
	ID     string // review or subtask id from the file name
	Plan   *Plan
	Review *Review
	Output *Output
}

// ClassifyProduct is the product outputFile names, not yet read: its kind
// and id, or an error when the name is no product's.
func ClassifyProduct(outputFile string) (Product, error) {
	kind, id, err := ClassifyOutput(outputFile)
	if err != nil {
		return Product{}, Invalidf("product", "", "%v", err)
	}
	return Product{Kind: kind, ID: id}, nil
}

// DecodeProductWithin checks and decodes data, the content of outputFile,
// into p (whose Kind and ID are set), nested no deeper than maxDepth.
func DecodeProductWithin(p Product, outputFile string, data []byte, maxDepth int) (Product, error) {
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
		return Product{}, Invalidf("product "+outputFile, "", "holds subtask_id %q, not %q", p.Output.SubtaskID, p.ID)
	}
	return p, nil
}
