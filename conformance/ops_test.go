package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// verdictWait bounds a wait for the daemon's verdict on a marker.
const verdictWait = time.Minute

// do runs one step on st through the operations layer, as a door does
// (the HTTP API the closest), and returns its result as JSON decoded.
func do(ctx context.Context, st workspace.Store, s Step) (any, error) {
	a := &args{m: s.Args}
	agent := s.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	res, err := op(ctx, st, s.Op, agent, a)
	if a.err != nil {
		return nil, fmt.Errorf("the case is malformed: %w", a.err)
	}
	if err != nil {
		return nil, err
	}
	return asJSON(res)
}

func op(ctx context.Context, st workspace.Store, name, agent string, a *args) (any, error) {
	family, verb, _ := strings.Cut(name, ".")
	switch family {
	case "env", "session", "memory":
		if verb == "item" || verb == "search" || verb == "namespaces" || strings.HasPrefix(verb, "item.") {
			return memoryItem(ctx, st, verb, agent, a)
		}
		sc, err := scope(ctx, st, family, agent, a)
		if err != nil {
			return nil, err
		}
		return entry(ctx, st, sc, verb, agent, a)
	}
	task := a.str("task")
	switch name {
	case "task.create":
		return st.CreateTask(ctx, workspace.NewTaskRequest{ID: a.str("id"), Description: a.str("description"), SubmittedBy: agent})
	case "task.show":
		t, err := st.GetTask(ctx, task)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"task": t, "state": nil}
		s, err := st.ReadState(ctx, task)
		switch {
		case err == nil:
			out["state"] = s
		case !errors.Is(err, workspace.ErrNotFound):
			return nil, err
		}
		return out, nil
	case "thread.create":
		return st.NewThread(ctx, workspace.NewThreadRequest{TaskID: task, ID: a.str("id"), From: agent, To: a.str("to"), Message: a.str("message")})
	case "plan.write":
		return product(ctx, st, task, a.flag("propose"), workspace.DoneRequest{TaskID: task, Agent: agent}, func(ctx context.Context) (string, int, error) {
			p, err := st.WritePlan(ctx, task, agent, a.raw("document"))
			return "plan.json", p.Version, err
		})
	case "plan.show":
		doc := "plan.json"
		if v := a.num("version"); v > 0 {
			if p, err := st.ReadPlan(ctx, task, 0); err != nil || p.Version != v {
				doc = fmt.Sprintf("plans/plan_v%d.json", v)
			}
		}
		return st.ReadTaskDoc(ctx, task, doc)
	case "output.write":
		sub := a.str("subtask")
		return product(ctx, st, task, a.flag("done"), workspace.DoneRequest{TaskID: task, Agent: agent, SubtaskID: sub}, func(ctx context.Context) (string, int, error) {
			rel, err := st.WriteOutput(ctx, task, sub, agent, a.raw("document"))
			return rel, 0, err
		})
	case "review.write":
		return product(ctx, st, task, a.flag("done"), workspace.DoneRequest{TaskID: task, Agent: agent}, func(ctx context.Context) (string, int, error) {
			rel, err := st.WriteReview(ctx, task, a.str("review"), agent, a.raw("document"))
			return rel, 0, err
		})
	case "claim":
		if err := service.BeforeMarker(ctx, st, "claim", task, true); err != nil {
			return nil, err
		}
		d, err := service.Claim(ctx, st, task, agent, a.str("subtask"), service.DeliverOptions{Wait: verdictWait, Served: true})
		return delivery(task, d, 0), err
	case "done":
		if err := service.BeforeMarker(ctx, st, "done", task, true); err != nil {
			return nil, err
		}
		req := workspace.DoneRequest{TaskID: task, Agent: agent, OutputFile: a.str("output_file"), SubtaskID: a.str("subtask"), Status: a.str("status"), Error: a.str("error")}
		d, err := service.Deliver(ctx, st, req, nil, service.DeliverOptions{Wait: verdictWait, Served: true})
		return delivery(task, d, 0), err
	case "events.list":
		evs, _, err := st.ReadEvents(ctx, task)
		if evs == nil {
			evs = []workspace.Event{}
		}
		return map[string]any{"events": evs}, err
	}
	return nil, fmt.Errorf("no op %q in this runner", name)
}

// product writes a task's document and, with mark, drops the done marker
// reporting it and waits for the verdict (service.Deliver), as the HTTP
// API's product routes do.
func product(ctx context.Context, st workspace.Store, task string, mark bool, req workspace.DoneRequest, write func(context.Context) (string, int, error)) (any, error) {
	version := 0
	w := func(ctx context.Context) (string, error) {
		rel, v, err := write(ctx)
		version = v
		return rel, err
	}
	if !mark {
		rel, err := w(ctx)
		return map[string]any{"task_id": task, "product": rel, "version": version}, err
	}
	if err := service.BeforeMarker(ctx, st, "done", task, true); err != nil {
		return nil, err
	}
	d, err := service.Deliver(ctx, st, req, w, service.DeliverOptions{Wait: verdictWait, Served: true})
	return delivery(task, d, version), err
}

// delivery is d as the HTTP API answers it.
func delivery(task string, d service.Delivery, version int) map[string]any {
	out := map[string]any{"task_id": task, "product": d.Product, "marker": d.Marker, "stands": d.Stands}
	if version > 0 {
		out["version"] = version
	}
	if d.Stands == service.Decided {
		out["verdict"] = d.Verdict
	}
	if d.Why != nil {
		out["why"] = d.Why.Error()
	}
	return out
}

// scope is the entry scope of an env, session or memory step.
func scope(ctx context.Context, st workspace.Store, family, agent string, a *args) (workspace.Scope, error) {
	switch family {
	case "session":
		task, th := a.str("task"), a.str("thread")
		if _, err := st.GetThread(ctx, task, th); err != nil {
			return workspace.Scope{}, err
		}
		return workspace.Scope{Kind: workspace.ScopeSession, TaskID: task, ThreadID: th}, nil
	case "memory":
		switch a.str("scope") {
		case "global":
			return workspace.Scope{Kind: workspace.ScopeGlobal}, nil
		case "agent":
			return workspace.Scope{Kind: workspace.ScopeAgent, Agent: agent}, nil
		}
		return workspace.Scope{}, fmt.Errorf("memory scope %q: the corpus has global and agent", a.str("scope"))
	}
	return workspace.Scope{Kind: workspace.ScopeThread, TaskID: a.str("task")}, nil
}

// entry is one entry operation in scope sc, compare-and-set refusals as
// version conflicts, as the HTTP API's entry routes answer.
func entry(ctx context.Context, st workspace.Store, sc workspace.Scope, verb, agent string, a *args) (any, error) {
	key := a.str("key")
	switch verb {
	case "get":
		return st.GetEntry(ctx, sc, key)
	case "list":
		items, err := st.ListEntries(ctx, sc)
		if items == nil {
			items = []workspace.ManifestItem{}
		}
		return map[string]any{"entries": items}, err
	case "delete":
		err := st.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: key, Agent: agent, IfVersion: a.num("if_version")})
		if a.num("if_version") > 0 && errors.Is(err, workspace.ErrConflict) {
			return nil, conflictAt(ctx, st, sc, key, err)
		}
		return map[string]any{}, err
	case "put":
		value := a.value()
		if ifv := a.num("if_version"); ifv > 0 {
			var desc *string
			if d, ok := a.m["short_description"].(string); ok {
				desc = &d
			}
			res, err := st.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: key, Description: desc, Value: value, Agent: agent, IfVersion: ifv})
			if errors.Is(err, workspace.ErrConflict) || errors.Is(err, workspace.ErrNotFound) {
				return nil, conflictAt(ctx, st, sc, key, err)
			}
			return res.Entry, err
		}
		res, err := st.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Description: a.str("short_description"), Value: value, Agent: agent, IfAbsent: a.flag("if_absent")})
		if a.flag("if_absent") && errors.Is(err, workspace.ErrConflict) {
			return nil, conflictAt(ctx, st, sc, key, err)
		}
		return res.Entry, err
	}
	return nil, fmt.Errorf("no entry op %q in this runner", verb)
}

// conflictAt is a compare-and-set on key refused by cause, with the
// version stored now.
func conflictAt(ctx context.Context, st workspace.Store, sc workspace.Scope, key string, cause error) error {
	cur := 0
	if e, err := st.GetEntry(ctx, sc, key); err == nil {
		cur = e.Version
	}
	return &versionConflict{current: cur, err: cause}
}

// memoryItem is one operation on namespaced memory (verb: item.put,
// item.get, item.delete, search, namespaces).
func memoryItem(ctx context.Context, st workspace.Store, verb, agent string, a *args) (any, error) {
	ns, key := workspace.Namespace(a.strs("namespace")), a.str("key")
	switch verb {
	case "item.get":
		return service.MemoryGet(ctx, st, ns, key)
	case "item.put":
		it, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: a.value(), TTLSeconds: a.num("ttl_seconds"),
			IfVersion: a.num("if_version"), IfAbsent: a.flag("if_absent"), Agent: agent})
		return it, itemConflict(err)
	case "item.delete":
		err := service.MemoryDelete(ctx, st, workspace.MemoryDeleteRequest{Namespace: ns, Key: key, IfVersion: a.num("if_version"), Agent: agent})
		return map[string]any{}, itemConflict(err)
	case "search":
		var filter []byte
		if f, ok := a.m["filter"]; ok {
			filter, _ = json.Marshal(f)
		}
		f, err := service.MemoryFilter(st, filter)
		if err != nil {
			return nil, err
		}
		items, err := service.MemorySearch(ctx, st, workspace.MemorySearchRequest{Prefix: a.strs("namespace_prefix"), Filter: f, Limit: a.num("limit"), Offset: a.num("offset")})
		if items == nil {
			items = []workspace.MemoryItem{}
		}
		return map[string]any{"items": items}, err
	case "namespaces":
		nss, err := service.MemoryNamespaces(ctx, st, workspace.NamespaceQuery{Prefix: a.strs("prefix"), Suffix: a.strs("suffix"),
			MaxDepth: a.num("max_depth"), Limit: a.num("limit"), Offset: a.num("offset")})
		if nss == nil {
			nss = []workspace.Namespace{}
		}
		return map[string]any{"namespaces": nss}, err
	}
	return nil, fmt.Errorf("no memory op %q in this runner", verb)
}

// itemConflict is a memory item's compare-and-set refusal as a version
// conflict with the version stored now; any other error as it is.
func itemConflict(err error) error {
	var ve *workspace.VersionError
	if errors.Is(err, workspace.ErrConflict) && errors.As(err, &ve) {
		return &versionConflict{current: ve.Current, err: err}
	}
	return err
}

// args are a step's arguments, read as the README says; the first
// argument of the wrong type is kept in err.
type args struct {
	m   map[string]any
	err error
}

func (a *args) bad(name, want string) {
	if a.err == nil {
		a.err = fmt.Errorf("argument %s: want %s, got %v", name, want, a.m[name])
	}
}

// str is a string argument, or its _b64 form's bytes.
func (a *args) str(name string) string {
	if b, ok := a.m[name+"_b64"]; ok {
		s, _ := b.(string)
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			a.bad(name+"_b64", "base64")
		}
		return string(data)
	}
	v, ok := a.m[name]
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.bad(name, "a string")
	}
	return s
}

func (a *args) strs(name string) []string {
	v, ok := a.m[name]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	out := make([]string, len(list))
	for i, e := range list {
		s, isStr := e.(string)
		ok = ok && isStr
		out[i] = s
	}
	if !ok {
		a.bad(name, "an array of strings")
	}
	return out
}

func (a *args) num(name string) int {
	v, ok := a.m[name]
	if !ok {
		return 0
	}
	n, isNum := number(v)
	if !isNum || n != float64(int(n)) {
		a.bad(name, "a whole number")
	}
	return int(n)
}

func (a *args) flag(name string) bool {
	v, ok := a.m[name]
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		a.bad(name, "true or false")
	}
	return b
}

// raw is argument name as JSON text.
func (a *args) raw(name string) []byte {
	data, err := json.Marshal(a.m[name])
	if err != nil {
		a.bad(name, "JSON")
	}
	return data
}

// value is the value of a put: value, or the text value_b64 or
// value_raw gives, or the one value_string_bytes or value_nested makes.
func (a *args) value() json.RawMessage {
	switch {
	case a.m["value_b64"] != nil:
		return json.RawMessage(a.str("value"))
	case a.m["value_raw"] != nil:
		return json.RawMessage(a.str("value_raw"))
	case a.m["value_string_bytes"] != nil:
		return json.RawMessage(`"` + strings.Repeat("x", a.num("value_string_bytes")) + `"`)
	case a.m["value_nested"] != nil:
		n := a.num("value_nested")
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	return a.raw("value")
}
