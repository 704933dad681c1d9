package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/pairbench"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkFoldedGrant: on PostgreSQL, a token's put_memory_item and
// get_memory_item calls over HTTP served on its remembered grant (one
// round trip to the database) against the same calls looking the token
// up (two), through two servers over one store, each with a session of
// the go-sdk client, alternated within each round (pairbench); and a
// ping, which looks the token up on both. "ratio" is remembered ÷
// looked up, in calls a second; put-vs-store pairs the MCP put on the
// remembered grant with the store's own put in-process (its ratio:
// MCP ÷ the store). Each way reports too the process's CPU a call
// ("NAME-cpu-µs/call": client, server and driver, in this one process;
// not the database's), which the load of the machine moves far less than
// the rates. Run it with
//
//	go test -run '^$' -bench FoldedGrant -benchtime 20x ./mcpserver/
func BenchmarkFoldedGrant(b *testing.B) {
	st, keeper := openRoot(b, pgRoot(b))
	tok, _, err := tokens.Add(b.Context(), keeper, tokens.Grant{Agent: "bench", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		b.Fatal(err)
	}
	sessions := map[string]*mcp.ClientSession{
		"remembered": serveMCP(b, st, keeper, nil).mustConnect(tok, ""),
		"lookup":     serveMCP(b, st, lookupOnly{keeper}, nil).mustConnect(tok, ""),
	}
	value := map[string]any{"text": strings.Repeat("x", 1000)}
	put := map[string]any{"namespace": itemNS, "key": "p", "value": value}
	const n = 200
	ways := func(call func(cs *mcp.ClientSession) error) map[string]func(int) error {
		m := map[string]func(int) error{}
		for how, cs := range sessions {
			m[how] = func(int) error {
				for range n {
					if err := call(cs); err != nil {
						return err
					}
				}
				return nil
			}
		}
		return m
	}
	// rates is pairbench.Rates with each way's CPU a call.
	rates := func(b *testing.B, first, second string, m map[string]func(int) error) {
		used, calls := map[string]time.Duration{}, map[string]int{}
		for how, way := range m {
			m[how] = func(w int) error {
				t0 := cpuTime(b)
				err := way(w)
				used[how] += cpuTime(b) - t0
				calls[how] += n
				return err
			}
		}
		pairbench.Rates(b, 1, n, first, second, m)
		for how, d := range used {
			b.ReportMetric(float64(d.Microseconds())/float64(calls[how]), how+"-cpu-µs/call")
		}
	}
	tool := func(name string, args any) func(cs *mcp.ClientSession) error {
		return func(cs *mcp.ClientSession) error {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err == nil && res.IsError {
				err = fmt.Errorf("%s: %v", name, res.Content)
			}
			return err
		}
	}
	if err := tool(ToolPutMemoryItem, put)(sessions["lookup"]); err != nil {
		b.Fatal(err)
	}
	b.Run("put", func(b *testing.B) {
		rates(b, "lookup", "remembered", ways(tool(ToolPutMemoryItem, put)))
	})
	b.Run("get", func(b *testing.B) {
		rates(b, "lookup", "remembered", ways(tool(ToolGetMemoryItem, getArgs)))
	})
	// The store's own put in-process, beside the MCP put on the
	// remembered grant: what the call adds to the operation it runs.
	b.Run("put-vs-store", func(b *testing.B) {
		m := ways(tool(ToolPutMemoryItem, put))
		data, _ := json.Marshal(value)
		m["store"] = func(int) error {
			for range n {
				if _, err := service.MemoryPut(b.Context(), st, workspace.MemoryPutRequest{Namespace: itemNS, Key: "p", Value: data, Agent: "bench"}); err != nil {
					return err
				}
			}
			return nil
		}
		delete(m, "lookup")
		rates(b, "store", "remembered", m)
	})
	b.Run("ping", func(b *testing.B) {
		rates(b, "lookup", "remembered", ways(func(cs *mcp.ClientSession) error { return cs.Ping(context.Background(), nil) }))
	})
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
