package api

import (
	"context"
	"net/http"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// delivery is the answer of a route that writes a product or drops a
// marker: what was written, and with a wait, where the marker stands.
type delivery struct {
	TaskID  string             `json:"task_id"`
	Product string             `json:"product,omitempty"`
	Version int                `json:"version,omitempty"`
	Marker  string             `json:"marker,omitempty"`
	Stands  string             `json:"stands,omitempty"`
	Verdict *workspace.Verdict `json:"verdict,omitempty"`
	Why     string             `json:"why,omitempty"`
}

func deliveryOf(taskID string, d service.Delivery) delivery {
	out := delivery{TaskID: taskID, Product: d.Product, Marker: d.Marker, Stands: d.Stands}
	if d.Stands == service.Decided {
		v := d.Verdict
		out.Verdict = &v
	}
	if d.Why != nil {
		out.Why = d.Why.Error()
	}
	return out
}

// product writes a task's document with write and, when mark is set,
// drops the done marker reporting it (req) and waits as the query's wait
// says: the one path of plans, outputs and reviews (service.Deliver).
func (h *Handler) product(c *call, id, op string, mark bool, req workspace.DoneRequest, write func(context.Context, []byte) (string, int, error)) error {
	wait, err := h.parseWait(c.r.URL.Query().Get("wait"))
	if err != nil {
		return err
	}
	if wait > 0 && !mark {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "wait", Msg: "a wait needs a marker to wait for",
			Hint: "add done=true (propose=true for a plan), or leave wait out"}
	}
	data, err := c.document()
	if err != nil {
		return err
	}
	if err := workspace.CheckDepth(data, h.st.Settings().Limits.MaxDepth); err != nil {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Err: err, Hint: "flatten the document"}
	}
	version := 0
	w := func(ctx context.Context) (string, error) {
		rel, v, err := write(ctx, data)
		version = v
		return rel, err
	}
	if !mark {
		rel, err := w(c.r.Context())
		if err != nil {
			return err
		}
		return c.reply(http.StatusOK, delivery{TaskID: id, Product: rel, Version: version})
	}
	if err := service.BeforeMarker(c.r.Context(), h.st, op, id, wait > 0); err != nil {
		return err
	}
	d, err := service.Deliver(c.r.Context(), h.st, req, w, service.DeliverOptions{Wait: wait, Served: wait > 0})
	if err != nil {
		return err
	}
	out := deliveryOf(id, d)
	out.Version = version
	return c.reply(http.StatusOK, out)
}

func (h *Handler) writePlan(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	if err := c.may(tokens.RightPlan, "write plans"); err != nil {
		return err
	}
	propose, err := c.boolQuery("propose")
	if err != nil {
		return err
	}
	if propose {
		if err := c.may(tokens.RightDone, "propose plans (a done marker)"); err != nil {
			return err
		}
	}
	return h.product(c, id, "write the plan of task "+id, propose, workspace.DoneRequest{TaskID: id, Agent: c.agent()},
		func(ctx context.Context, data []byte) (string, int, error) {
			p, err := service.WritePlan(ctx, h.st, id, c.agent(), data)
			return "plan.json", p.Version, err
		})
}

func (h *Handler) writeOutput(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	sub := c.r.PathValue("subtask")
	if err := workspace.ValidateID("subtask id", sub); err != nil {
		return err
	}
	done, err := c.boolQuery("done")
	if err != nil {
		return err
	}
	if done {
		if err := c.may(tokens.RightDone, "report subtasks done"); err != nil {
			return err
		}
	}
	return h.product(c, id, "write output "+sub+" of task "+id, done, workspace.DoneRequest{TaskID: id, Agent: c.agent(), SubtaskID: sub},
		func(ctx context.Context, data []byte) (string, int, error) {
			rel, err := h.st.WriteOutput(ctx, id, sub, c.agent(), data)
			return rel, 0, err
		})
}

func (h *Handler) writeReview(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	rid := c.r.PathValue("review")
	if err := workspace.ValidateID("review id", rid); err != nil {
		return err
	}
	if err := c.may(tokens.RightReview, "write reviews"); err != nil {
		return err
	}
	done, err := c.boolQuery("done")
	if err != nil {
		return err
	}
	if done {
		if err := c.may(tokens.RightDone, "report reviews done"); err != nil {
			return err
		}
	}
	return h.product(c, id, "write review "+rid+" of task "+id, done, workspace.DoneRequest{TaskID: id, Agent: c.agent()},
		func(ctx context.Context, data []byte) (string, int, error) {
			rel, err := h.st.WriteReview(ctx, id, rid, c.agent(), data)
			return rel, 0, err
		})
}

// claimRequest is POST .../claims's body.
type claimRequest struct {
	Subtask string `json:"subtask"`
	Wait    string `json:"wait"`
}

func (h *Handler) claim(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	if err := c.may(tokens.RightClaim, "claim subtasks"); err != nil {
		return err
	}
	var in claimRequest
	if err := c.decode("the claim", &in); err != nil {
		return err
	}
	if err := workspace.ValidateID("subtask id", in.Subtask); err != nil {
		return err
	}
	wait, err := h.parseWait(in.Wait)
	if err != nil {
		return err
	}
	op := "claim " + in.Subtask + " of task " + id
	if err := service.BeforeMarker(c.r.Context(), h.st, op, id, wait > 0); err != nil {
		return err
	}
	d, err := service.Claim(c.r.Context(), h.st, id, c.agent(), in.Subtask, service.DeliverOptions{Wait: wait, Served: wait > 0})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, deliveryOf(id, d))
}

// doneRequest is POST .../done's body.
type doneRequest struct {
	OutputFile string `json:"output_file"`
	Subtask    string `json:"subtask"`
	Status     string `json:"status"`
	Error      string `json:"error"`
	Escalate   string `json:"escalate"`
	Wait       string `json:"wait"`
}

func (h *Handler) done(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	if err := c.may(tokens.RightDone, "report subtasks done"); err != nil {
		return err
	}
	var in doneRequest
	if err := c.decode("the done report", &in); err != nil {
		return err
	}
	switch in.Status {
	case "", "completed", "failed", "cancelled":
	default:
		return workspace.FieldErr(workspace.ErrInvalid, "done", workspace.FieldStatus, "use completed, failed or cancelled", "status %q", in.Status)
	}
	if in.OutputFile == "" && in.Status != "cancelled" {
		return workspace.FieldErr(workspace.ErrInvalid, "done", workspace.FieldOutputFile, "name the product: plan.json, outputs/<subtask>.json or reviews/<id>.json", "no output_file")
	}
	wait, err := h.parseWait(in.Wait)
	if err != nil {
		return err
	}
	op := "done " + in.OutputFile + " of task " + id
	if err := service.BeforeMarker(c.r.Context(), h.st, op, id, wait > 0); err != nil {
		return err
	}
	req := workspace.DoneRequest{TaskID: id, Agent: c.agent(), OutputFile: in.OutputFile, SubtaskID: in.Subtask, Status: in.Status, Error: in.Error, Escalate: in.Escalate}
	d, err := service.Deliver(c.r.Context(), h.st, req, nil, service.DeliverOptions{Wait: wait, Served: wait > 0})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, deliveryOf(id, d))
}

// amendment is the answer of the amendment route: the delivery of the
// version written, what it changes and whether it waits for a review.
type amendment struct {
	delivery
	Added     []string `json:"added,omitempty"`
	Changed   []string `json:"changed,omitempty"`
	Withdrawn []string `json:"withdrawn,omitempty"`
	Review    bool     `json:"review"`
}

func (h *Handler) amendPlan(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	if err := c.may(tokens.RightPlan, "amend plans"); err != nil {
		return err
	}
	wait, err := h.parseWait(c.r.URL.Query().Get("wait"))
	if err != nil {
		return err
	}
	var a workspace.PlanAmendment
	if err := c.decode("amendment", &a); err != nil {
		return err
	}
	op := "amend the plan of task " + id
	if err := service.BeforeMarker(c.r.Context(), h.st, op, id, wait > 0); err != nil {
		return err
	}
	am, err := service.AmendPlan(c.r.Context(), h.st, id, c.agent(), a, service.DeliverOptions{Wait: wait, Served: wait > 0})
	if err != nil {
		return err
	}
	out := amendment{delivery: deliveryOf(id, am.Delivery), Added: am.Diff.Added, Changed: am.Diff.Changed, Withdrawn: am.Diff.Withdrawn, Review: am.Review}
	out.Version = am.Plan.Version
	return c.reply(http.StatusOK, out)
}
