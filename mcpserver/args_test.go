package mcpserver

import (
	"strings"
	"testing"
)

// checked is one tool's argument checker with decodeArgs for its input
// type.
type checked struct {
	tool   string
	check  *argChecker
	decode func([]byte) error
}

func checkerFor[In any](tool string) checked {
	c := newArgChecker(tool, inputSchema[In]())
	return checked{tool, c, func(b []byte) error {
		_, err := decodeArgs[In](c, parseArgs(b), b)
		return err
	}}
}

// FuzzArguments feeds arbitrary bytes to the argument checks of the tools
// with the richest inputs. Whatever comes in, a check returns an error
// naming the tool, or passes arguments that decode into the tool's input
// type: the schema a model sees and the Go type never disagree.
func FuzzArguments(f *testing.F) {
	tools := []checked{
		checkerFor[writePlanInput](ToolWritePlan),
		checkerFor[amendPlanInput](ToolAmendPlan),
		checkerFor[writeReviewInput](ToolWriteReview),
		checkerFor[doneInput](ToolSignalDone),
		checkerFor[updateEnvInput](ToolUpdateEnvData),
		checkerFor[storeMemoryInput](ToolStoreMemory),
		checkerFor[planVersionInput](ToolGetPlan),
		checkerFor[emptyInput](ToolGetTask),
	}
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"key":"k","value":1}`,
		`{"subtasks":[{"id":"st_1","description":"d","dependencies":["st_0"],"max_retries":2}],"worker_count":3}`,
		`{"subtasks":[{"id":"../x","description":"d"}]}`,
		`{"add":[{"id":"f1","description":"d","dependencies":["st_1"]}],"withdraw":["st_2"]}`, `{"change":[{"id":"x"}]}`, `{"withdraw":"st_1"}`,
		`{"type":"plan_review","verdict":"approved","issues":[{"problem":"p","severity":"high"}]}`,
		`{"subtask_id":"st_1","output":{"a":[1,2,{"b":null}]},"status":"failed","error":"e"}`,
		`{"key":"k","if_version":1e300}`, `{"version":-1}`, `{"version":2.5}`, `{"version":"2"}`, `{"version":2.0}`, `{"version":1e0}`, `{}0`,
		`{"scope":"po","key":"k","value":{}}`, `{"key":"k","value":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
		`{"subtasks":[{"id":"a","description":"d"}],"subtasks":7}`, "{\"key\":\"\xff\xfe\",\"value\":1}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, c := range tools {
			_, err := c.check.check(raw)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "arguments of "+c.tool) {
					t.Errorf("%s: error %q does not name the tool", c.tool, err)
				}
				continue
			}
			if err := c.decode(raw); err != nil {
				t.Errorf("%s: %q passed the schema but does not decode: %v", c.tool, raw, err)
			}
		}
	})
}
