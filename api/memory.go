package api

import (
	"net/http"
)

// The memory namespaces: items under a namespace of labels, searched by
// prefix and filter, their namespaces listed. The routes are in the
// document; until the store serves namespaces they answer 501.

func notYet(what string) error {
	return refuse(http.StatusNotImplemented, kindNotImplemented, what+" is not served by this server yet",
		"keep long-term entries in the global or the agent memory (/api/v1/memory/global, /api/v1/memory/agents/{agent}) meanwhile")
}

func (h *Handler) getItem(c *call) error     { return notYet("memory namespaces") }
func (h *Handler) putItem(c *call) error     { return notYet("memory namespaces") }
func (h *Handler) deleteItem(c *call) error  { return notYet("memory namespaces") }
func (h *Handler) searchItems(c *call) error { return notYet("memory namespaces") }
func (h *Handler) namespaces(c *call) error  { return notYet("memory namespaces") }
