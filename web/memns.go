package web

import (
	"net/http"
	"strconv"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// The memory page's namespaced memory: GET /api/memory/namespaces lists
// the namespaces that hold items (?prefix= once per label, as many as
// the model's largest page), GET /api/memory/items the items under a
// namespace (?namespace= once per label; ?limit=, ?offset=), each with
// its value.

// memoryPage is the largest page the panel asks for.
const memoryPage = workspace.MaxMemoryLimit

func (s *Server) getMemoryNamespaces(w http.ResponseWriter, r *http.Request) {
	q := workspace.NamespaceQuery{Prefix: r.URL.Query()["prefix"], Limit: memoryPage}
	nss, err := service.MemoryNamespaces(r.Context(), s.st, q)
	answerList(w, nss, err)
}

func (s *Server) getMemoryItems(w http.ResponseWriter, r *http.Request) {
	req := workspace.MemorySearchRequest{Prefix: r.URL.Query()["namespace"], Limit: 100}
	for name, dst := range map[string]*int{"limit": &req.Limit, "offset": &req.Offset} {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			fail(w, workspace.Invalidf(name, "give a whole number", "%q is not a number", v))
			return
		}
		*dst = n
	}
	items, err := service.MemorySearch(r.Context(), s.st, req)
	answer(w, items, err)
}
