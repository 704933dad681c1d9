// Package conformance reads the language-neutral conformance corpus
// (cases/*.json, the format in README.md): what an operation of the
// workspace means, as data, so that the Go stores and every client in
// another language are held to the same answers. It reads a case, fills
// its placeholders and matches an answer against what a step expects;
// running the steps is the runner's (the Go one is this package's test,
// over the operations layer on every store).
package conformance

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Case is one file of the corpus: a story of steps.
type Case struct {
	// File is the file the case was read from (not in the JSON).
	File  string `json:"-"`
	Name  string `json:"name"`
	Doc   string `json:"doc"`
	Steps []Step `json:"steps"`
}

// Step is one operation of a case and what must come of it.
type Step struct {
	Op         string         `json:"op"`
	Agent      string         `json:"agent,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Expect     *Expect        `json:"expect,omitempty"`
	Verdict    string         `json:"verdict,omitempty"`
	Eventually bool           `json:"eventually,omitempty"`
}

// Expect is a step's expectation: a result to match, or an error kind.
type Expect struct {
	Result         any    `json:"result,omitempty"`
	Error          string `json:"error,omitempty"`
	CurrentVersion *int   `json:"current_version,omitempty"`
}

// DefaultAgent is who acts in a step that names nobody.
const DefaultAgent = "coordinator"

// Agents are the agents a step may name: over HTTP, each is a token.
var Agents = []string{"coordinator", "reviewer", "worker_1", "worker_2"}

// Verdicts a step may expect.
var Verdicts = []string{"won", "lost", "applied", "refused", "not_found"}

// Kinds are the error kinds a step may expect: the HTTP API's.
var Kinds = []string{"invalid", "not_found", "version_conflict", "conflict", "locked", "unsafe", "forbidden", "unauthorized"}

// Ops are the operations of the corpus.
var Ops = []string{
	"task.create", "task.show", "thread.create",
	"plan.write", "plan.show", "output.write", "review.write", "claim", "done",
	"events.list",
	"env.put", "env.get", "env.list", "env.delete",
	"session.put", "session.get", "session.list", "session.delete",
	"memory.put", "memory.get", "memory.list", "memory.delete",
	"memory.item.put", "memory.item.get", "memory.item.delete", "memory.search", "memory.namespaces",
}

// Load reads every case of dir (cases/*.json), sorted by file name, and
// checks each as Check does.
func Load(dir string) ([]Case, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no cases in %s: %w", dir, fs.ErrNotExist)
	}
	slices.Sort(names)
	cases := make([]Case, 0, len(names))
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		c, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
		}
		c.File = filepath.Base(name)
		if want := strings.TrimSuffix(c.File, ".json"); c.Name != want {
			return nil, fmt.Errorf("%s: the case is named %q: name it as its file, %q", c.File, c.Name, want)
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// Parse reads one case: unknown members, operations, agents, kinds and
// verdicts are refused, so a typo is no silent pass.
func Parse(data []byte) (Case, error) {
	var c Case
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return c, err
	}
	if dec.More() {
		return c, fmt.Errorf("more than one JSON document")
	}
	return c, Check(c)
}

// Check reports what is wrong with a case: no name, doc or steps, or a
// step with an operation, agent, kind or verdict the format does not
// have.
func Check(c Case) error {
	if c.Name == "" || c.Doc == "" || len(c.Steps) == 0 {
		return fmt.Errorf("a case has a name, a doc and at least one step")
	}
	for i, s := range c.Steps {
		where := fmt.Sprintf("step %d (%s)", i, s.Op)
		switch {
		case !slices.Contains(Ops, s.Op):
			return fmt.Errorf("%s: no such op", where)
		case s.Agent != "" && !slices.Contains(Agents, s.Agent):
			return fmt.Errorf("%s: agent %q is not one of %v", where, s.Agent, Agents)
		case s.Verdict != "" && !slices.Contains(Verdicts, s.Verdict):
			return fmt.Errorf("%s: verdict %q is not one of %v", where, s.Verdict, Verdicts)
		case s.Expect != nil && s.Expect.Error != "" && !slices.Contains(Kinds, s.Expect.Error):
			return fmt.Errorf("%s: error kind %q is not one of %v", where, s.Expect.Error, Kinds)
		case s.Expect != nil && s.Expect.Error != "" && s.Expect.Result != nil:
			return fmt.Errorf("%s: expects both a result and an error", where)
		case s.Expect != nil && s.Expect.Error != "" && s.Verdict != "":
			return fmt.Errorf("%s: expects both an error and a verdict", where)
		}
	}
	return nil
}

// placeholder is a string that stands for a fresh id.
var placeholder = regexp.MustCompile(`^\$[a-z][a-z0-9_]*$`)

// Fill returns the case with every placeholder of its steps' arguments
// and expectations replaced by a fresh id (name_ and eight hex digits),
// the same one for a placeholder throughout the case.
func Fill(c Case) Case {
	ids := map[string]string{}
	fresh := func(p string) string {
		if id, ok := ids[p]; ok {
			return id
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := p[1:] + "_" + hex.EncodeToString(b[:])
		ids[p] = id
		return id
	}
	out := c
	out.Steps = make([]Step, len(c.Steps))
	for i, s := range c.Steps {
		s.Args, _ = fill(s.Args, fresh).(map[string]any)
		if s.Expect != nil {
			e := *s.Expect
			e.Result = fill(e.Result, fresh)
			s.Expect = &e
		}
		out.Steps[i] = s
	}
	return out
}

func fill(v any, fresh func(string) string) any {
	switch v := v.(type) {
	case string:
		if placeholder.MatchString(v) {
			return fresh(v)
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = fill(e, fresh)
		}
		return out
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = fill(e, fresh)
		}
		return out
	}
	return v
}

// Any is the expected string that matches any value there and not null.
const Any = "<any>"

// Includes is the one member of an expected object that matches an array
// holding elements that match its own, in that order, among others (a
// listing of a scope other cases share).
const Includes = "<includes>"

// includes matches actual, an array, against want, the elements it must
// hold in order among others.
func includes(path, at string, want, actual any) string {
	w, ok := want.([]any)
	if !ok {
		return fmt.Sprintf("%s: %s takes an array, not %s", at, Includes, show(want))
	}
	a, ok := actual.([]any)
	if !ok {
		return fmt.Sprintf("%s: want an array including %s, got %s", at, show(w), show(actual))
	}
	i := 0
	for _, e := range a {
		if i < len(w) && match(path, w[i], e) == "" {
			i++
		}
	}
	if i < len(w) {
		return fmt.Sprintf("%s: want an array including, in order, %s; %s is not in %s", at, show(w), show(w[i]), show(a))
	}
	return ""
}

// Match reports where actual (decoded JSON, numbers as json.Number or
// float64) differs from want, as README.md says: objects by the members
// want names, arrays element by element, null as null or missing, "<any>"
// as anything but null, {"<includes>": [...]} as an array holding those
// elements in order among others. The empty string is a match.
func Match(want, actual any) string { return match("", want, actual) }

func match(path string, want, actual any) string {
	at := path
	if at == "" {
		at = "the result"
	}
	switch w := want.(type) {
	case nil:
		if actual != nil {
			return fmt.Sprintf("%s: want null or missing, got %s", at, show(actual))
		}
		return ""
	case string:
		if w == Any {
			if actual == nil {
				return fmt.Sprintf("%s: want a value, got null or nothing", at)
			}
			return ""
		}
	case map[string]any:
		if inc, ok := w[Includes]; ok && len(w) == 1 {
			return includes(path, at, inc, actual)
		}
		a, ok := actual.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %s", at, show(actual))
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			if d := match(path+"."+k, w[k], a[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		a, ok := actual.([]any)
		if !ok || len(a) != len(w) {
			return fmt.Sprintf("%s: want %d elements %s, got %s", at, len(w), show(w), show(actual))
		}
		for i := range w {
			if d := match(fmt.Sprintf("%s[%d]", path, i), w[i], a[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if wn, ok := number(want); ok {
		if an, ok := number(actual); ok && an == wn {
			return ""
		}
		return fmt.Sprintf("%s: want %s, got %s", at, show(want), show(actual))
	}
	if want != actual {
		return fmt.Sprintf("%s: want %s, got %s", at, show(want), show(actual))
	}
	return ""
}

// number is v as a float64 when it is a JSON number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// show is v as JSON, cut short.
func show(v any) string {
	if v == nil {
		return "null"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > 1000 {
		return string(data[:1000]) + "…"
	}
	return string(data)
}
