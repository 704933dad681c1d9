package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// The memory namespaces: items under a namespace of labels (the repeated
// query parameter namespace, in order) and a key, a JSON object each,
// with an optional time to live; searched by prefix and filter, their
// namespaces listed by prefix, suffix and depth (service.Memory…). A
// token reads them with global memory read access and writes them with
// write access, as the global memory, the other memory every agent
// shares.

// memory is the store's namespaced memory, or a 501 when it keeps none:
// the routes are the API's, the store cannot serve them.
func (h *Handler) memory() error {
	if _, err := service.Memory(h.st); err != nil {
		return refuse(http.StatusNotImplemented, kindNotImplemented, workspace.Reason(err), service.Hint(err))
	}
	return nil
}

// itemName is the namespace and key of the query, checked.
func (c *call) itemName() (workspace.Namespace, string, error) {
	q := c.r.URL.Query()
	ns := workspace.Namespace(q["namespace"])
	if err := workspace.ValidateNamespace(ns); err != nil {
		return nil, "", err
	}
	key := q.Get("key")
	if err := workspace.CheckMemoryGet(ns, key); err != nil {
		return nil, "", err
	}
	return ns, key, nil
}

func (h *Handler) getItem(c *call) error {
	if err := c.mayGlobal(false); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	ns, key, err := c.itemName()
	if err != nil {
		return err
	}
	it, err := service.MemoryGet(c.r.Context(), h.st, ns, key)
	if err != nil {
		return err
	}
	c.w.Header().Set("ETag", etag(it.Version))
	return c.replyWith(itemBytes, http.StatusOK, it)
}

// itemWrite is PUT /memory/items's body.
type itemWrite struct {
	Value      jsontext.Value `json:"value"`
	TTLSeconds int            `json:"ttl_seconds"`
}

func (h *Handler) putItem(c *call) error {
	if err := c.mayGlobal(true); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	ns, key, err := c.itemName()
	if err != nil {
		return err
	}
	cond, err := conditions(c.r)
	if err != nil {
		return err
	}
	data, err := c.body()
	if err != nil {
		return err
	}
	// The body is an envelope one level over the value (call.decode).
	var in itemWrite
	if err := decodeItem(data, h.st.Settings().Limits.MaxDepth+1, &in); err != nil {
		return err
	}
	it, err := service.MemoryPut(c.r.Context(), h.st, workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(in.Value),
		TTLSeconds: in.TTLSeconds, IfVersion: cond.ifVersion, IfAbsent: cond.ifAbsent, Agent: c.agent()})
	if err != nil {
		return itemConflict(err)
	}
	c.w.Header().Set("ETag", etag(it.Version))
	return c.replyWith(itemBytes, http.StatusOK, it)
}

func (h *Handler) deleteItem(c *call) error {
	if err := c.mayGlobal(true); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	ns, key, err := c.itemName()
	if err != nil {
		return err
	}
	cond, err := deleteConditions(c.r)
	if err != nil {
		return err
	}
	if err := service.MemoryDelete(c.r.Context(), h.st, workspace.MemoryDeleteRequest{Namespace: ns, Key: key, IfVersion: cond.ifVersion, Agent: c.agent()}); err != nil {
		return itemConflict(err)
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// itemConflict is a compare-and-set the store refused as a 412 with the
// version stored now; any other error as it is.
func itemConflict(err error) error {
	var ve *workspace.VersionError
	if !errors.Is(err, workspace.ErrConflict) || !errors.As(err, &ve) {
		return err
	}
	cur := ve.Current
	hint := fmt.Sprintf("read it again (its version is %d now) and decide from what it holds", cur)
	if cur == 0 {
		hint = "there is no such item now: create it without If-Match"
	}
	return &apiError{status: http.StatusPreconditionFailed, kind: kindVersionConflict, msg: err.Error(), hint: hint, current: &cur}
}

// memorySearch is POST /memory/search's body.
type memorySearch struct {
	NamespacePrefix []string        `json:"namespace_prefix"`
	Filter          json.RawMessage `json:"filter"`
	Limit           *int            `json:"limit"`
	Offset          int             `json:"offset"`
}

func (h *Handler) searchItems(c *call) error {
	if err := c.mayGlobal(false); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	var in memorySearch
	if err := c.decode("the search", &in); err != nil {
		return err
	}
	f, err := service.MemoryFilter(h.st, in.Filter)
	if err != nil {
		return err
	}
	limit, err := atLeastOne("limit", in.Limit)
	if err != nil {
		return err
	}
	items, err := service.MemorySearch(c.r.Context(), h.st, workspace.MemorySearchRequest{Prefix: in.NamespacePrefix, Filter: f, Limit: limit, Offset: in.Offset})
	if err != nil {
		return err
	}
	if items == nil {
		items = []workspace.MemoryItem{}
	}
	return c.reply(http.StatusOK, map[string]any{"items": items})
}

// namespaceQuery is POST /memory/namespaces's body.
type namespaceQuery struct {
	Prefix   []string `json:"prefix"`
	Suffix   []string `json:"suffix"`
	MaxDepth *int     `json:"max_depth"`
	Limit    *int     `json:"limit"`
	Offset   int      `json:"offset"`
}

func (h *Handler) namespaces(c *call) error {
	if err := c.mayGlobal(false); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	var in namespaceQuery
	if err := c.decode("the query", &in); err != nil {
		return err
	}
	depth, err := atLeastOne("max_depth", in.MaxDepth)
	if err != nil {
		return err
	}
	limit, err := atLeastOne("limit", in.Limit)
	if err != nil {
		return err
	}
	nss, err := service.MemoryNamespaces(c.r.Context(), h.st, workspace.NamespaceQuery{Prefix: in.Prefix, Suffix: in.Suffix, MaxDepth: depth, Limit: limit, Offset: in.Offset})
	if err != nil {
		return err
	}
	if nss == nil {
		nss = []workspace.Namespace{}
	}
	return c.reply(http.StatusOK, map[string]any{"namespaces": nss})
}

// atLeastOne is a body's optional count field: 0 when not given (the
// store's default), an error when given below 1, as the document says
// (the store reads 0 as "not given", so a client's 0 would otherwise
// silently mean the default).
func atLeastOne(name string, v *int) (int, error) {
	if v == nil {
		return 0, nil
	}
	if *v < 1 {
		return 0, workspace.Invalidf(name, fmt.Sprintf("give %s of 1 or more, or leave it out for the default", name), "%s %d", name, *v)
	}
	return *v, nil
}
