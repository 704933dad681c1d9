package conformance

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want, actual string
		ok                 bool
	}{
		{"subset of an object", `{"a": 1}`, `{"a": 1, "b": 2}`, true},
		{"member differs", `{"a": 1}`, `{"a": 2}`, false},
		{"member missing", `{"a": 1}`, `{"b": 1}`, false},
		{"nested subset", `{"a": {"b": "x"}}`, `{"a": {"b": "x", "c": 1}}`, true},
		{"null matches missing", `{"value": null}`, `{"key": "k"}`, true},
		{"null matches null", `{"value": null}`, `{"value": null}`, true},
		{"null refuses a value", `{"value": null}`, `{"value": 0}`, false},
		{"any matches a value", `{"a": "<any>"}`, `{"a": [1]}`, true},
		{"any refuses missing", `{"a": "<any>"}`, `{}`, false},
		{"any refuses null", `{"a": "<any>"}`, `{"a": null}`, false},
		{"numbers by value", `{"n": 1}`, `{"n": 1.0}`, true},
		{"number against a string", `{"n": 1}`, `{"n": "1"}`, false},
		{"arrays in order", `[{"k": "a"}, {"k": "b"}]`, `[{"k": "a", "v": 1}, {"k": "b"}]`, true},
		{"arrays out of order", `[{"k": "a"}, {"k": "b"}]`, `[{"k": "b"}, {"k": "a"}]`, false},
		{"arrays of another length", `[1]`, `[1, 2]`, false},
		{"empty array against null", `{"e": []}`, `{"e": null}`, false},
		{"object against an array", `{}`, `[]`, false},
		{"strings exactly", `"a"`, `"A"`, false},
		{"booleans", `true`, `true`, true},
		{"includes in order", `{"<includes>": [{"k": "a"}, {"k": "c"}]}`, `[{"k": "a"}, {"k": "b"}, {"k": "c"}]`, true},
		{"includes nothing", `{"<includes>": []}`, `[]`, true},
		{"includes out of order", `{"<includes>": [{"k": "c"}, {"k": "a"}]}`, `[{"k": "a"}, {"k": "c"}]`, false},
		{"includes one missing", `{"<includes>": [{"k": "d"}]}`, `[{"k": "a"}]`, false},
		{"includes against an object", `{"<includes>": [1]}`, `{"a": 1}`, false},
		{"includes beside another member", `{"<includes>": [1], "x": 1}`, `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Match(decode(t, tt.want), decode(t, tt.actual))
			if (d == "") != tt.ok {
				t.Fatalf("Match(%s, %s) = %q, want a match: %v", tt.want, tt.actual, d, tt.ok)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"not json":          `{`,
		"two documents":     `{"name":"a","doc":"d","steps":[{"op":"env.get"}]} {}`,
		"unknown member":    `{"name":"a","doc":"d","steps":[{"op":"env.get","expected":{}}]}`,
		"no steps":          `{"name":"a","doc":"d","steps":[]}`,
		"no doc":            `{"name":"a","steps":[{"op":"env.get"}]}`,
		"unknown op":        `{"name":"a","doc":"d","steps":[{"op":"env.gets"}]}`,
		"unknown agent":     `{"name":"a","doc":"d","steps":[{"op":"env.get","agent":"worker_9"}]}`,
		"unknown kind":      `{"name":"a","doc":"d","steps":[{"op":"env.get","expect":{"error":"nope"}}]}`,
		"unknown verdict":   `{"name":"a","doc":"d","steps":[{"op":"claim","verdict":"maybe"}]}`,
		"error and result":  `{"name":"a","doc":"d","steps":[{"op":"env.get","expect":{"error":"invalid","result":{}}}]}`,
		"error and verdict": `{"name":"a","doc":"d","steps":[{"op":"claim","verdict":"won","expect":{"error":"invalid"}}]}`,
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(data)); err == nil {
				t.Fatalf("Parse(%s) took it", data)
			}
		})
	}
}

func TestFill(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{"name":"a","doc":"d","steps":[
		{"op":"task.create","args":{"id":"$task","tags":["$task","$other","$"," $task","$Task"]}},
		{"op":"task.show","args":{"task":"$task"},"expect":{"result":{"task":{"id":"$task"},"$task":"x"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := Fill(c), Fill(c)
	id := a.Steps[0].Args["id"].(string)
	if !regexp.MustCompile(`^task_[0-9a-f]{8}$`).MatchString(id) {
		t.Fatalf("$task became %q", id)
	}
	tags := a.Steps[0].Args["tags"].([]any)
	if tags[0] != id || tags[1] == id || !strings.HasPrefix(tags[1].(string), "other_") {
		t.Fatalf("tags %v: want $task as %s and $other fresh", tags, id)
	}
	if tags[2] != "$" || tags[3] != " $task" || tags[4] != "$Task" {
		t.Fatalf("tags %v: strings that are no placeholder changed", tags)
	}
	res := a.Steps[1].Expect.Result.(map[string]any)
	if a.Steps[1].Args["task"] != id || res["task"].(map[string]any)["id"] != id || res["$task"] != "x" {
		t.Fatalf("the second step has %v and %v: want %s in both, and keys untouched", a.Steps[1].Args, res, id)
	}
	if b.Steps[0].Args["id"] == id {
		t.Fatal("two runs of a case drew the same id")
	}
	if c.Steps[0].Args["id"] != "$task" {
		t.Fatal("Fill changed the case it was given")
	}
}

func TestCasesLoad(t *testing.T) {
	t.Parallel()
	cases, err := Load("cases")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 50 {
		t.Fatalf("%d cases, want at least 50", len(cases))
	}
	// Every operation of the format is used by a case, every kind and
	// verdict a case may expect too, so none is described and never run.
	used := map[string]bool{}
	for _, c := range cases {
		for _, s := range c.Steps {
			used["op "+s.Op] = true
			used["verdict "+s.Verdict] = true
			if s.Expect != nil {
				used["kind "+s.Expect.Error] = true
			}
		}
	}
	var want []string
	for _, op := range Ops {
		want = append(want, "op "+op)
	}
	for _, v := range Verdicts {
		want = append(want, "verdict "+v)
	}
	for _, k := range []string{"invalid", "not_found", "version_conflict", "conflict"} {
		want = append(want, "kind "+k)
	}
	for _, w := range want {
		if !used[w] {
			t.Errorf("no case has %s", w)
		}
	}
}
