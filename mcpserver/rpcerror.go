package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/workspaced/workspaced/internal/guard"
)

// The errors of the HTTP transport: a refused request is answered with
// its HTTP status and a JSON-RPC error an MCP client shows its model.

// CodeRateLimited is the JSON-RPC error code of a request refused for a
// limit (429): the code proposed for MCP's rate-limiting errors, with
// the seconds to wait in its data as retryAfter.
const CodeRateLimited = -32023

// WriteRefusal answers a request the guard of a listener refused (a
// limit, an origin) as an MCP client reads it: the HTTP status with
// Retry-After, and a JSON-RPC error carrying the message, the hint and,
// for a limit, the seconds to wait.
func WriteRefusal(rw http.ResponseWriter, r *http.Request, f *guard.Refusal) {
	f.SetHeader(rw.Header())
	e := &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: f.Msg + "\nhint: " + f.Hint}
	if f.Status == http.StatusTooManyRequests {
		e.Code = CodeRateLimited
		e.Data, _ = json.Marshal(map[string]int{"retryAfter": f.RetryAfterSeconds()})
	}
	writeRPCError(rw, r, f.Status, e)
}

// rpcError answers a request with an HTTP status and a JSON-RPC error
// carrying msg, with the request's id when its body has one, so that a
// client shows the message rather than the status alone.
func rpcError(rw http.ResponseWriter, r *http.Request, status int, msg string) {
	code := int64(jsonrpc.CodeInvalidRequest)
	if status == http.StatusNotFound || status == http.StatusBadRequest {
		code = jsonrpc.CodeInvalidParams
	}
	writeRPCError(rw, r, status, &jsonrpc.Error{Code: code, Message: msg})
}

func writeRPCError(rw http.ResponseWriter, r *http.Request, status int, e *jsonrpc.Error) {
	var id jsonrpc.ID
	if r.Body != nil {
		if data, err := io.ReadAll(r.Body); err == nil {
			var m struct {
				ID any `json:"id"`
			}
			if json.NewDecoder(bytes.NewReader(data)).Decode(&m) == nil && m.ID != nil {
				id, _ = jsonrpc.MakeID(m.ID)
			}
		}
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: e})
	if err != nil {
		http.Error(rw, e.Message, status)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	rw.Write(data)
}
