package mcpserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkServerCall: on PostgreSQL, the server's own cost of one
// request of a session over HTTP — a ping, a put_memory_item of a new key
// with a small object (what the TypeScript benchmark puts), a
// get_memory_item — and the store's own put in-process, each its own
// sub-benchmark, so that a CPU profile of one is that request's alone.
// The client is a bare HTTP client posting the JSON-RPC message as the
// SDK's would and reading the answer whole, the same for every request,
// so the CPU a call ("cpu-µs/call": the process's user and system time,
// not the database's) and the allocations are the server's and the
// driver's, plus a small constant. A put less a ping is what a tool call
// adds to a request. Run it with
//
//	go test -run '^$' -bench ServerCall -benchtime 2000x -benchmem ./mcpserver/
//
// (-cpuprofile with one sub-benchmark, e.g. -bench ServerCall/put$.)
func BenchmarkServerCall(b *testing.B) {
	st, keeper := openRoot(b, pgRoot(b))
	tok, _, err := tokens.Add(b.Context(), keeper, tokens.Grant{Agent: "bench", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		b.Fatal(err)
	}
	f := serveMCP(b, st, keeper, nil)
	session := f.mustConnect(tok, "").ID()
	client := &http.Client{}
	post := func(id int, body string) error {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(data, fmt.Appendf(nil, `"id":%d,"result":`, id)) ||
			bytes.Contains(data, []byte(`"isError":true`)) {
			return fmt.Errorf("request %d: %d %s", id, resp.StatusCode, data)
		}
		return nil
	}
	id := 1
	calls := map[string]func(i int) string{
		"ping": func(int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id) },
		"put": func(i int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"namespace":["bench","mcp"],"key":"k%d","value":{"i":%d,"text":"memory number %d","tags":["bench","node"],"score":%g}}}}`,
				id, ToolPutMemoryItem, i, i, i, float64(i)/7)
		},
		"get": func(int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"namespace":["bench","mcp"],"key":"k0"}}}`,
				id, ToolGetMemoryItem)
		},
	}
	// Warm up: the connections, the prepared statements, the tables'
	// first pages, and the key the gets read.
	for i := range 50 {
		for _, how := range []string{"put", "ping", "get"} {
			if err := post(id, calls[how](i)); err != nil {
				b.Fatal(err)
			}
			id++
		}
	}
	key := 1000 // each put a new key
	for _, how := range []string{"ping", "put", "get"} {
		b.Run(how, func(b *testing.B) {
			b.ReportAllocs()
			t0 := cpuTime(b)
			for b.Loop() {
				if err := post(id, calls[how](key)); err != nil {
					b.Fatal(err)
				}
				id++
				key++
			}
			b.ReportMetric(float64((cpuTime(b)-t0).Microseconds())/float64(b.N), "cpu-µs/call")
		})
	}
	b.Run("store", func(b *testing.B) {
		b.ReportAllocs()
		t0 := cpuTime(b)
		for b.Loop() {
			i := key
			key++
			value := fmt.Appendf(nil, `{"i":%d,"text":"memory number %d","tags":["bench","node"],"score":%g}`, i, i, float64(i)/7)
			if _, err := service.MemoryPut(b.Context(), st, workspace.MemoryPutRequest{Namespace: []string{"bench", "store"}, Key: fmt.Sprintf("k%d", i), Value: value, Agent: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime(b)-t0).Microseconds())/float64(b.N), "cpu-µs/call")
	})
}
