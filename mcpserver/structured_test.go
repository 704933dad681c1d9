package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStructuredResults: a JSON answer comes back as structuredContent
// too — a document as itself, an array or a value under a key (entries,
// value), a marker's verdict — and a text answer has none.
func TestStructuredResults(t *testing.T) {
	t.Parallel()
	w, cs := observer(t)
	writeState(t, w)
	mustCall(t, cs, ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": []int{1, 2}})
	structured := func(tool string, args any) (string, string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		if res.StructuredContent == nil {
			return res.Content[0].(*mcp.TextContent).Text, ""
		}
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, string(data)
	}
	text, got := structured(ToolListEnvData, nil)
	var items []map[string]any
	if err := json.Unmarshal([]byte(text), &items); err != nil || len(items) != 1 {
		t.Fatalf("list_env_data text %s: %v", text, err)
	}
	var entries struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(got), &entries); err != nil || len(entries.Entries) != 1 || entries.Entries[0]["key"] != "k" {
		t.Fatalf("list_env_data structured %s: %v", got, err)
	}
	if _, got = structured(ToolGetEnvData, map[string]any{"key": "k"}); got != `{"value":[1,2]}` {
		t.Fatalf("get_env_data structured %s", got)
	}
	text, got = structured(ToolGetTaskState, nil)
	jsonEqual(t, got, text)
	text, got = structured(ToolGetTask, nil)
	jsonEqual(t, got, text)
	if _, got = structured(ToolClaimSubtask, map[string]any{"subtask_id": "st_1"}); got == "" {
		t.Fatal("claim_subtask: no structured answer")
	} else {
		var v markerReply
		if err := json.Unmarshal([]byte(got), &v); err != nil || v.Verdict != verdictQueued || v.Marker == "" {
			t.Fatalf("claim_subtask structured %s: %v", got, err)
		}
	}
	if _, got = structured(ToolStoreEnvData, map[string]any{"key": "k2", "short_description": "d", "value": 1}); got != "" {
		t.Fatalf("store_env_data, a text answer, has structured content %s", got)
	}
}
