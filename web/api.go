package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/machine"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	s.mux = m
	s.pageRoutes(m)
	// The API.
	m.HandleFunc("GET /api/csrf", s.csrf)
	m.HandleFunc("GET /api/tasks", s.listTasks)
	m.HandleFunc("GET /api/tasks/{id}", s.withTask(s.getTask))
	m.HandleFunc("GET /api/tasks/{id}/plans", s.withTask(s.getPlans))
	m.HandleFunc("GET /api/tasks/{id}/outputs/{subtask}", s.withTask(s.getOutput))
	m.HandleFunc("GET /api/tasks/{id}/reviews", s.withTask(s.getReviews))
	m.HandleFunc("GET /api/tasks/{id}/threads", s.withTask(s.getThreads))
	m.HandleFunc("GET /api/tasks/{id}/env", s.withTask(s.getEnv))
	m.HandleFunc("GET /api/tasks/{id}/env/{key}", s.withTask(s.getEnvKey))
	m.HandleFunc("GET /api/tasks/{id}/sessions", s.withTask(s.getSessions))
	m.HandleFunc("GET /api/tasks/{id}/sessions/{thread}/{key}", s.withTask(s.getSessionKey))
	m.HandleFunc("GET /api/tasks/{id}/journal", s.withTask(s.getJournal))
	m.HandleFunc("GET /api/tasks/{id}/backups", s.withTask(s.getBackups))
	m.HandleFunc("GET /api/tasks/{id}/events", s.withTask(s.taskEvents))
	m.HandleFunc("GET /api/events", s.allEvents)
	m.HandleFunc("GET /api/friction", s.getFriction)
	m.HandleFunc("GET /api/memory", s.getMemory)
	m.HandleFunc("GET /api/memory/global/{key}", s.getMemoryKey)
	m.HandleFunc("GET /api/memory/agents/{agent}/{key}", s.getMemoryKey)
	m.HandleFunc("GET /api/memory/namespaces", s.getMemoryNamespaces)
	m.HandleFunc("GET /api/memory/items", s.getMemoryItems)
	s.viewRoutes(m)
	// Actions.
	m.HandleFunc("POST /api/tasks/{id}/plan/review", s.action(s.withTask(s.reviewPlan)))
	m.HandleFunc("POST /api/tasks/{id}/checkpoints/{cp}/review", s.action(s.withTask(s.reviewCheckpoint)))
	m.HandleFunc("POST /api/tasks/{id}/escalations/review", s.action(s.withTask(s.answerEscalation)))
	m.HandleFunc("POST /api/tasks/{id}/cancel", s.action(s.withTask(s.cancelTask)))
	m.HandleFunc("POST /api/friction/{id}/resolve", s.action(s.resolveFriction))
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path, "see docs/HTTP.md for the routes")
	})
}

// apiError is every error response's body.
type apiError struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

func writeError(w http.ResponseWriter, code int, msg, hint string) {
	writeJSON(w, code, apiError{Error: msg, Hint: hint})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"error":"cannot encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// fail answers with the status a workspace error calls for.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, workspace.ErrNotFound), errors.Is(err, friction.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, workspace.ErrInvalid), errors.Is(err, workspace.ErrUnsafe), errors.Is(err, friction.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, workspace.ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, workspace.ErrLocked), errors.Is(err, locking.ErrLocked):
		code = http.StatusServiceUnavailable
	}
	writeError(w, code, err.Error(), workspace.HintOf(err))
}

// answer writes v as JSON, or the error err.
func answer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// answerList is answer for a list, written [] when it is empty.
func answerList[T any](w http.ResponseWriter, v []T, err error) {
	if v == nil {
		v = []T{}
	}
	answer(w, v, err)
}

func isNotFound(err error) bool { return errors.Is(err, workspace.ErrNotFound) }

// withTask checks the task id of the path (400 when it is no id, 404 when
// there is no such task) before h runs.
func (s *Server) withTask(h func(w http.ResponseWriter, r *http.Request, id string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := workspace.ValidateID("task id", id); err != nil {
			fail(w, err)
			return
		}
		if _, err := s.st.GetTask(r.Context(), id); err != nil {
			fail(w, err)
			return
		}
		h(w, r, id)
	}
}

func (s *Server) csrf(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"token": csrfToken(w, r, s.secure(r)), "header": csrfHeader})
}

func intParam(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter " + name, Msg: "want a whole number from 0 to " + strconv.Itoa(max)}
	}
	return n, nil
}

func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 100, 1000)
	if err != nil {
		fail(w, err)
		return
	}
	offset, err := intParam(r, "offset", 0, 1<<30)
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	if q.Has("after") {
		s.listTasksAfter(w, r, q.Get("after"), limit)
		return
	}
	writeJSON(w, http.StatusOK, s.index.query(q.Get("status"), q.Get("q"), offset, limit))
}

// listTasksAfter is a page of GET /api/tasks?after=ID: the tasks that
// match, in id order, after the task id given ("" for the first page),
// from the store's list of ids; only the summaries of tasks looked at are
// read, from the index when it has them, so a page costs its own tasks
// and not the workspace's.
func (s *Server) listTasksAfter(w http.ResponseWriter, r *http.Request, after string, limit int) {
	q := r.URL.Query()
	status, text := q.Get("status"), strings.ToLower(strings.TrimSpace(q.Get("q")))
	ids, err := s.st.TaskIDs(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	p := TaskPage{Limit: limit, After: after, Counts: s.index.counts(text), Tasks: []Summary{}}
	for _, id := range ids[sort.SearchStrings(ids, after):] {
		if id <= after {
			continue
		}
		sum, ok := s.index.get(id)
		if !ok {
			if sum, ok = summarize(r.Context(), s.st, id); !ok {
				continue
			}
		}
		if (status != "" && sum.Status != status) || (text != "" && !strings.Contains(strings.ToLower(sum.ID+"\n"+sum.Description), text)) {
			continue
		}
		if len(p.Tasks) == limit {
			p.Next = p.Tasks[limit-1].ID
			break
		}
		p.Tasks = append(p.Tasks, sum)
	}
	p.Total = -1 // not counted: see Counts
	writeJSON(w, http.StatusOK, p)
}

// TaskView is GET /api/tasks/{id}: the task, its plan and its state, each
// as in its file (null when not written yet), with why a file could not
// be read. The plan is the version the state runs once one is approved
// (plan.json may hold an amendment awaiting review: that is Amendment).
type TaskView struct {
	Task       workspace.Task   `json:"task"`
	Plan       *workspace.Plan  `json:"plan"`
	Amendment  *workspace.Plan  `json:"amendment,omitempty"`
	State      *workspace.State `json:"state"`
	PlanError  string           `json:"plan_error,omitempty"`
	StateError string           `json:"state_error,omitempty"`
}

func (s *Server) getTask(w http.ResponseWriter, r *http.Request, id string) {
	t, err := s.st.GetTask(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	v := TaskView{Task: t}
	if st, err := s.st.ReadState(r.Context(), id); err == nil {
		v.State = &st
	} else if !isNotFound(err) {
		v.StateError = err.Error()
	}
	version := 0
	if st := v.State; st != nil && st.PlanStatus == "approved" {
		version = st.PlanVersion
		if am := st.Amendment; am != nil {
			v.Amendment, _ = s.st.ReadPlan(r.Context(), id, am.Version)
		}
	}
	if p, err := s.st.ReadPlan(r.Context(), id, version); err == nil {
		v.Plan = p
	} else if !isNotFound(err) {
		v.PlanError = err.Error()
	}
	writeJSON(w, http.StatusOK, v)
}

// getPlans is every version of the plan, oldest first.
func (s *Server) getPlans(w http.ResponseWriter, r *http.Request, id string) {
	cur, err := s.st.ReadPlan(r.Context(), id, 0)
	if isNotFound(err) {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{}})
		return
	}
	if err != nil {
		fail(w, err)
		return
	}
	versions := []*workspace.Plan{}
	for v := 1; v < cur.Version; v++ {
		if p, err := s.st.ReadPlan(r.Context(), id, v); err == nil {
			versions = append(versions, p)
		}
	}
	versions = append(versions, cur)
	writeJSON(w, http.StatusOK, map[string]any{"versions": versions})
}

func (s *Server) getOutput(w http.ResponseWriter, r *http.Request, id string) {
	st := r.PathValue("subtask")
	if err := workspace.ValidateID("subtask id", st); err != nil {
		fail(w, err)
		return
	}
	doc, err := s.st.ReadTaskDoc(r.Context(), id, "outputs/"+st+".json")
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(doc, '\n'))
}

func (s *Server) getReviews(w http.ResponseWriter, r *http.Request, id string) {
	revs, skipped, err := s.st.ListReviews(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	if skipped == nil {
		skipped = []workspace.Skipped{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"reviews": revs, "skipped": skipped})
}

func (s *Server) getThreads(w http.ResponseWriter, r *http.Request, id string) {
	ts, err := s.st.ListThreads(r.Context(), id)
	answerList(w, ts, err)
}

func (s *Server) getEnv(w http.ResponseWriter, r *http.Request, id string) {
	items, err := s.st.ListEntries(r.Context(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: id})
	answerList(w, items, err)
}

func (s *Server) getEnvKey(w http.ResponseWriter, r *http.Request, id string) {
	e, err := s.st.GetEntry(r.Context(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}, r.PathValue("key"))
	answer(w, e, err)
}

// SessionView is one thread's session entries, in GET
// /api/tasks/{id}/sessions: the task's own (root) thread first, then its
// threads by creation time; a thread without entries is left out.
type SessionView struct {
	Thread string                   `json:"thread"`
	Items  []workspace.ManifestItem `json:"items"`
}

func (s *Server) getSessions(w http.ResponseWriter, r *http.Request, id string) {
	threads, err := s.st.ListThreads(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	ids := []string{id}
	for _, t := range threads {
		ids = append(ids, t.ID)
	}
	out := []SessionView{}
	for _, th := range ids {
		items, err := s.st.ListEntries(r.Context(), workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: th})
		if err != nil && !isNotFound(err) {
			fail(w, err)
			return
		}
		if len(items) > 0 {
			out = append(out, SessionView{Thread: th, Items: items})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSessionKey(w http.ResponseWriter, r *http.Request, id string) {
	th := r.PathValue("thread")
	if err := workspace.ValidateID("thread id", th); err != nil {
		fail(w, err)
		return
	}
	e, err := s.st.GetEntry(r.Context(), workspace.Scope{Kind: workspace.ScopeSession, TaskID: id, ThreadID: th}, r.PathValue("key"))
	answer(w, e, err)
}

// JournalView is one record of GET /api/tasks/{id}/journal with the
// daemon's verdict on it, read from the state as an agent reads it: won,
// lost, applied, refused or not_found once the state reflects the
// record (with the reason of a refusal), taken before.
type JournalView struct {
	workspace.JournalRecord
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// verdictTaken is the verdict of a record the state does not reflect
// yet: taken by the daemon, not yet applied.
const verdictTaken = "taken"

func (s *Server) getJournal(w http.ResponseWriter, r *http.Request, id string) {
	recs, err := s.st.ReadJournal(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	st, err := s.st.ReadState(r.Context(), id)
	if err != nil && !isNotFound(err) {
		fail(w, err)
		return
	}
	out := make([]JournalView, 0, len(recs))
	for _, rec := range recs {
		v := JournalView{JournalRecord: rec, Verdict: verdictTaken}
		if err == nil && st.JournalSeq >= rec.Seq {
			j := machine.Judge(st, rec, rec.File)
			v.Verdict, v.Reason = j.Verdict, j.Reason
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// backupView is one backup of a state.
type backupView struct {
	Name string    `json:"name"`
	Time time.Time `json:"time"`
	Size int64     `json:"size"`
}

func (s *Server) getBackups(w http.ResponseWriter, r *http.Request, id string) {
	bs, err := s.st.ListBackups(r.Context(), id)
	if err != nil {
		fail(w, err)
		return
	}
	out := make([]backupView, 0, len(bs))
	for _, b := range bs {
		out = append(out, backupView{Name: b.Name, Time: b.Time, Size: b.Size})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getFriction(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	entries, err := friction.Open(s.st, "").List(r.Context(), friction.Filter{Status: q.Get("status"), Type: q.Get("type")})
	answerList(w, entries, err)
}

// MemoryView is GET /api/memory: the manifests of the global memory and
// of each agent's.
type MemoryView struct {
	Global []workspace.ManifestItem            `json:"global"`
	Agents map[string][]workspace.ManifestItem `json:"agents"`
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := MemoryView{Agents: map[string][]workspace.ManifestItem{}}
	var err error
	if v.Global, err = s.st.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}); err != nil && !isNotFound(err) {
		fail(w, err)
		return
	}
	if v.Global == nil {
		v.Global = []workspace.ManifestItem{}
	}
	agents, err := s.st.MemoryAgents(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	for _, a := range agents {
		items, err := s.st.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeAgent, Agent: a})
		if err != nil {
			continue
		}
		if items == nil {
			items = []workspace.ManifestItem{}
		}
		v.Agents[a] = items
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) getMemoryKey(w http.ResponseWriter, r *http.Request) {
	sc := workspace.Scope{Kind: workspace.ScopeGlobal}
	if a := r.PathValue("agent"); a != "" {
		sc = workspace.Scope{Kind: workspace.ScopeAgent, Agent: a}
	}
	e, err := s.st.GetEntry(r.Context(), sc, r.PathValue("key"))
	answer(w, e, err)
}

// allEventsJSON is GET /api/events without a stream: the latest events of
// every task (or of the tasks named by task=), oldest first.
func (s *Server) allEventsJSON(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 200, 10000)
	if err != nil {
		fail(w, err)
		return
	}
	ids := r.URL.Query()["task"]
	for _, id := range ids {
		if err := workspace.ValidateID("task id", id); err != nil {
			fail(w, err)
			return
		}
	}
	if len(ids) == 0 {
		if ids, err = s.st.TaskIDs(r.Context()); err != nil {
			fail(w, err)
			return
		}
	}
	// The last limit events, kept in a circular buffer.
	ring := make([]workspace.Event, limit)
	n := 0
	_, err = s.st.MergeEvents(r.Context(), ids, func(e workspace.Event) error {
		if limit > 0 {
			ring[n%limit] = e
			n++
		}
		return nil
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fail(w, err)
		return
	}
	out := make([]workspace.Event, 0, min(n, limit))
	for i := max(0, n-limit); i < n; i++ {
		out = append(out, ring[i%limit])
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": out})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func atoi64(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseInt(s, 10, 64)
}
