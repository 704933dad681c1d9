package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// POST /memory/batch: many puts of namespaced memory in one request,
// applied in their order (service.MemoryPutItems), one result each. A
// put its compare-and-set refuses is a 412 result with the problem a
// single put's 412 carries; any other fault of any put refuses the whole
// request before anything is written.

// batchBodyFactor is how many single puts' bodies a batch's body may
// weigh.
const batchBodyFactor = 4

// memoryBatch is POST /memory/batch's body.
type memoryBatch struct {
	Puts []batchPut `json:"puts"`
}

// batchPut is one put of a batch: the query and headers of a single
// put, as fields.
type batchPut struct {
	Namespace  []string       `json:"namespace"`
	Key        string         `json:"key"`
	Value      jsontext.Value `json:"value"`
	TTLSeconds int            `json:"ttl_seconds"`
	IfVersion  *int           `json:"if_version"`
	IfAbsent   bool           `json:"if_absent"`
}

// batchAnswer is POST /memory/batch's answer.
type batchAnswer struct {
	Results []batchResult `json:"results"`
}

// batchResult is one put's result: its item (200) or its refusal (412).
type batchResult struct {
	Status  int                   `json:"status"`
	Item    *workspace.MemoryItem `json:"item,omitempty"`
	Problem *Problem              `json:"problem,omitempty"`
}

func (h *Handler) putItems(c *call) error {
	if err := c.mayGlobal(true); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	data, err := c.bodyWithin(batchBodyFactor * h.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	// The envelope is three levels over each value ({"puts": [{"value":
	// ...}]}), which the store checks at MaxDepth itself.
	var in memoryBatch
	if err := decodeBatch(data, h.st.Settings().Limits.MaxDepth+3, &in); err != nil {
		return err
	}
	reqs, err := c.batchPuts(in.Puts)
	if err != nil {
		return err
	}
	res, err := service.MemoryPutItems(c.r.Context(), h.st, reqs)
	if err != nil {
		return err
	}
	out := make([]batchResult, len(res))
	for i, r := range res {
		if r.Err != nil {
			p := problemOf(c.r, itemConflict(r.Err))
			out[i] = batchResult{Status: p.Status, Problem: &p}
			continue
		}
		out[i] = batchResult{Status: http.StatusOK, Item: &res[i].Item}
	}
	return c.replyWith(answerBytes, http.StatusOK, batchAnswer{Results: out})
}

// batchPuts is the batch's puts as requests: 1 to MaxMemoryBatch of
// them (413 past it), each version to match 1 or more; the store checks
// the rest.
func (c *call) batchPuts(puts []batchPut) ([]workspace.MemoryPutRequest, error) {
	switch n := len(puts); {
	case n == 0:
		return nil, workspace.Invalidf("the batch", fmt.Sprintf(`give 1 to %d puts, e.g. {"puts": [{"namespace": ["users","42"], "key": "prefs", "value": {"theme": "dark"}}]}`, workspace.MaxMemoryBatch), "no puts")
	case n > workspace.MaxMemoryBatch:
		return nil, refuse(http.StatusRequestEntityTooLarge, kindTooLarge, fmt.Sprintf("the batch has %d puts, over %d", n, workspace.MaxMemoryBatch),
			fmt.Sprintf("split the puts into batches of at most %d", workspace.MaxMemoryBatch))
	}
	reqs := make([]workspace.MemoryPutRequest, len(puts))
	for i, p := range puts {
		req := workspace.MemoryPutRequest{Namespace: p.Namespace, Key: p.Key, Value: json.RawMessage(p.Value), TTLSeconds: p.TTLSeconds, IfAbsent: p.IfAbsent, Agent: c.agent()}
		if p.IfVersion != nil {
			if *p.IfVersion < 1 {
				return nil, workspace.AtPut(i, workspace.FieldErr(workspace.ErrInvalid, "if_version", workspace.FieldIfVersion,
					"give the version a get returned (1 or more), or leave if_version out", "version %d", *p.IfVersion))
			}
			req.IfVersion = *p.IfVersion
		}
		reqs[i] = req
	}
	return reqs, nil
}
