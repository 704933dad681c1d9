package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// admitSeeds are arguments of several tools, admitted and not: the right
// shapes, and each way of being wrong or unusual the validator knows.
var admitSeeds = []string{
	``, `null`, `[]`, `"x"`, `{}`, `{"key":"k"}`, `{"KEY":"k"}`, `{"key":null}`, `{"key":1}`, `{"key":"k","extra":1}`,
	`{"namespace":["bench","mcp"],"key":"k1","value":{"i":1,"text":"memory number 1","tags":["bench","node"],"score":0.142857}}`,
	`{"namespace":["a"],"key":"k","value":1,"ttl_seconds":2.0,"if_version":1e0}`,
	`{"namespace":["a"],"key":"k","value":1,"ttl_seconds":0,"if_version":-1,"if_absent":"yes"}`,
	`{"namespace":["a"],"key":"k","value":1,"ttl_seconds":2147483648}`, `{"namespace":["a"],"key":"k","value":1,"ttl_seconds":99999999999999999999}`,
	`{"namespace":"a","key":"k","value":1}`, `{"namespace":[1],"key":"k","value":1}`, `{"namespace":[],"key":"","value":null}`,
	`{"namespace":["a"],"key":"k","key":"l","value":null}`, `{"namespace":["a"],"key":"\u006b","value":"<&>"}`,
	`{"scope":"global","key":"k","value":[1,2]}`, `{"scope":"planet","key":"k"}`, `{"scope":"glob\u0061l","key":"k"}`,
	`{"subtask_id":"st_1"}`, `{"subtask_id":"st 1"}`, `{"subtask_id":"-st"}`, `{"subtask_id":""}`, `{"subtask_id":"st_1\n"}`,
	`{"subtask_id":"st_1","task":"t1","thread":"t1"}`, `{"task":"t/1"}`,
	`{"subtask_id":"st_1","output":{"a":[1,2,{"b":null}]},"status":"failed","error":"e"}`, `{"output":[1]}`, `{"status":"done"}`,
	`{"subtasks":[{"id":"st_1","description":"d","dependencies":["st_0"],"estimated_complexity":"low","parallelizable":true,"max_retries":2}],"worker_count":3}`,
	`{"subtasks":[{"id":"st_1","description":"d","max_retries":-1}]}`, `{"subtasks":[{"id":"st_1"}]}`, `{"subtasks":[{"id":"st_1","description":"d","x":1}]}`,
	`{"subtasks":[{"id":"st_1","description":"d","dependencies":["a b"]}]}`, `{"subtasks":{}}`,
	`{"type":"plan_review","verdict":"approved","issues":[{"severity":"low","description":"d"}]}`, `{"type":"plan_review","verdict":"fine"}`,
	`{"namespace_prefix":["a"],"filter":{"x":{"$gt":2.0}},"limit":10,"offset":0}`, `{"limit":0}`, `{"offset":-0}`, `{"limit":10.0}`,
	`{"detail":"verbose"}`, `{"detail":"loud"}`, `{"budget":100}`, `{"max_depth":1,"prefix":["a"],"suffix":["*"]}`,
}

// FuzzAdmittedIsValid: the quick check admits only arguments the
// validator admits, on every tool.
func FuzzAdmittedIsValid(f *testing.F) {
	for _, s := range admitSeeds {
		f.Add([]byte(s))
	}
	tools := toolset()
	f.Fuzz(func(t *testing.T, raw []byte) {
		args := parseArgs(raw)
		if args.top == nil {
			return
		}
		for _, d := range tools {
			if !d.check.admits(args.top) {
				continue
			}
			// Text that is not UTF-8 is refused by CheckText, which
			// decodeArgs runs on what the quick check admits.
			if workspace.CheckText("arguments", raw) != nil {
				continue
			}
			if _, err := d.check.check(raw); err != nil {
				t.Fatalf("%s admits %q, which the validator refuses: %v", d.tool.Name, raw, err)
			}
		}
	})
}

// TestAdmitted: the arguments a client ordinarily sends are admitted
// without the validator; those it refuses, or whose integers are written
// 2.0, are left to it.
func TestAdmitted(t *testing.T) {
	for _, c := range []struct {
		tool, args string
		admitted   bool
	}{
		{ToolPutMemoryItem, `{"namespace":["bench","mcp"],"key":"k1","value":{"i":1,"tags":["a"],"score":0.1}}`, true},
		{ToolPutMemoryItem, `{"namespace":["a"],"key":"k","value":null,"ttl_seconds":60,"if_absent":true}`, true},
		{ToolPutMemoryItem, `{"namespace":["a"],"key":"k","value":1,"ttl_seconds":2.0}`, false},
		{ToolPutMemoryItem, `{"namespace":["a"],"key":"k","value":1,"ttl_seconds":0}`, false},
		{ToolPutMemoryItem, `{"namespace":["a"],"key":"k"}`, false},
		{ToolPutMemoryItem, `{"namespace":["a"],"key":"k","value":1,"Key":"k"}`, false},
		{ToolGetMemoryItem, `{"namespace":["a"],"key":"k"}`, true},
		{ToolGetMemoryItem, `{"namespace":"a","key":"k"}`, false},
		{ToolStoreMemory, `{"key":"k","value":"v","scope":"session"}`, true},
		{ToolStoreMemory, `{"key":"k","value":"v","scope":"planet"}`, false},
		{ToolClaimSubtask, `{"subtask_id":"st_1","task":"t1"}`, true},
		{ToolClaimSubtask, `{"subtask_id":"st 1"}`, false},
		{ToolClaimSubtask, `{"subtask_id":"st_\u0031"}`, true},
		{ToolWritePlan, `{"subtasks":[{"id":"a","description":"d","dependencies":["b"],"estimated_complexity":"high","max_retries":0}]}`, true},
		{ToolWritePlan, `{"subtasks":[{"id":"a","description":"d","estimated_complexity":"huge"}]}`, false},
		{ToolListEnvData, `{}`, true},
		{ToolListEnvData, `{"x":1}`, false},
	} {
		d := toolByName()[c.tool]
		args := parseArgs(json.RawMessage(c.args))
		if got := d.check.admits(args.top); got != c.admitted {
			t.Errorf("%s %s: admitted %v, want %v", c.tool, c.args, got, c.admitted)
		}
		if _, err := d.check.check(json.RawMessage(c.args)); c.admitted && err != nil {
			t.Errorf("%s %s: admitted, but the validator refuses it: %v", c.tool, c.args, err)
		}
	}
}
