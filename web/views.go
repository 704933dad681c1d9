package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The routes of the views for people watching a run: plan and output
// versions compared in words, the replay of the journal, the Gantt chart,
// search within a task, and whether a daemon serves the workspace.

// maxHistory bounds the versions of one output the panel reads, and
// maxOutputBytes the size of each.
const (
	maxHistory     = 1000
	maxOutputBytes = 8 << 20
)

func (s *Server) viewRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /api/tasks/{id}/plans/diff", s.withTask(s.diffPlans))
	m.HandleFunc("GET /api/tasks/{id}/outputs/{subtask}/history", s.withTask(s.outputHistory))
	m.HandleFunc("GET /api/tasks/{id}/outputs/{subtask}/diff", s.withTask(s.diffOutputs))
	m.HandleFunc("GET /api/tasks/{id}/state", s.withTask(s.stateAt))
	m.HandleFunc("GET /api/tasks/{id}/gantt", s.withTask(s.gantt))
	m.HandleFunc("GET /api/tasks/{id}/search", s.withTask(s.search))
	m.HandleFunc("GET /api/serving", s.getServing)
}

// diffPlans compares plan version from (default: the one before to) with
// version to (default: the current one).
func (s *Server) diffPlans(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	cur, err := s.st.ReadPlan(ctx, id, 0)
	if err != nil {
		fail(w, err)
		return
	}
	to, err := intParam(r, "to", cur.Version, cur.Version)
	if err != nil {
		fail(w, err)
		return
	}
	from, err := intParam(r, "from", max(1, to-1), cur.Version)
	if err != nil {
		fail(w, err)
		return
	}
	a, err := s.readPlan(r, id, from, cur)
	if err != nil {
		fail(w, err)
		return
	}
	b, err := s.readPlan(r, id, to, cur)
	if err != nil {
		fail(w, err)
		return
	}
	d, err := DiffPlans(a, b)
	answer(w, d, err)
}

func (s *Server) readPlan(r *http.Request, id string, version int, cur *workspace.Plan) (*workspace.Plan, error) {
	if version == cur.Version || version == 0 {
		return cur, nil
	}
	return s.st.ReadPlan(r.Context(), id, version)
}

// OutputVersion is one version of an output: 1, 2, … as kept in
// outputs/history, and 0 for the current one.
type OutputVersion struct {
	Version int             `json:"version"`
	Doc     json.RawMessage `json:"doc"`
}

// outputVersions reads every kept version of the output the request's
// subtask names, oldest first, then the current one (when there is one).
func (s *Server) outputVersions(r *http.Request, id string) (sub string, out []OutputVersion, err error) {
	sub = r.PathValue("subtask")
	if err := workspace.ValidateID("subtask id", sub); err != nil {
		return "", nil, err
	}
	for n := 1; n <= maxHistory; n++ {
		doc, err := s.st.ReadTaskFile(r.Context(), id, workspace.HistoryName("outputs", sub, n), maxOutputBytes)
		if isNotFound(err) {
			break
		}
		if err != nil {
			return "", nil, err
		}
		if !json.Valid(doc) {
			return "", nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read output " + sub, Msg: fmt.Sprintf("version %d is not JSON", n)}
		}
		out = append(out, OutputVersion{Version: n, Doc: doc})
	}
	doc, err := s.st.ReadTaskDoc(r.Context(), id, "outputs/"+sub+".json")
	switch {
	case err == nil:
		out = append(out, OutputVersion{Version: 0, Doc: doc})
	case !isNotFound(err):
		return "", nil, err
	}
	if len(out) == 0 {
		return "", nil, &workspace.Error{Kind: workspace.ErrNotFound, Op: "read output " + sub, Msg: "no output and no kept version"}
	}
	return sub, out, nil
}

func (s *Server) outputHistory(w http.ResponseWriter, r *http.Request, id string) {
	_, vs, err := s.outputVersions(r, id)
	answer(w, map[string]any{"versions": vs}, err)
}

// diffOutputs compares version from (default: the last kept one) of an
// output with version to (default 0: the current one).
func (s *Server) diffOutputs(w http.ResponseWriter, r *http.Request, id string) {
	sub, vs, err := s.outputVersions(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	last := vs[len(vs)-1].Version
	to, err := intParam(r, "to", last, maxHistory)
	if err != nil {
		fail(w, err)
		return
	}
	def := 0
	if len(vs) > 1 {
		def = vs[len(vs)-2].Version
	}
	from, err := intParam(r, "from", def, maxHistory)
	if err != nil {
		fail(w, err)
		return
	}
	find := func(n int) []byte {
		for _, v := range vs {
			if v.Version == n {
				return v.Doc
			}
		}
		return nil
	}
	a, b := find(from), find(to)
	if a == nil || b == nil {
		fail(w, &workspace.Error{Kind: workspace.ErrNotFound, Op: "compare output " + sub, Msg: "no such version", Hint: "see the versions at .../history (0 is the current one)"})
		return
	}
	cs, err := DiffDocs(a, b)
	answer(w, map[string]any{"from": from, "to": to, "changes": cs}, err)
}

// ReplayView is GET /api/tasks/{id}/state?seq=N: the state folded from
// the journal up to record Seq, and the last record there is.
type ReplayView struct {
	Seq     int64           `json:"seq"`
	LastSeq int64           `json:"last_seq"`
	State   workspace.State `json:"state"`
	Plan    *workspace.Plan `json:"plan"`
}

func (s *Server) stateAt(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	task, recs, plans, err := s.journalOf(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	v := ReplayView{}
	if len(recs) > 0 {
		v.LastSeq = recs[len(recs)-1].Seq
	}
	v.Seq = v.LastSeq
	if q := r.URL.Query().Get("seq"); q != "" {
		if v.Seq, err = atoi64(q); err != nil {
			fail(w, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter seq", Msg: "want a whole number"})
			return
		}
	}
	if v.State, err = StateAt(task, plans, recs, v.Seq); err != nil {
		fail(w, err)
		return
	}
	if v.State.PlanVersion > 0 {
		v.Plan, _ = s.st.ReadPlan(ctx, id, v.State.PlanVersion)
	}
	writeJSON(w, http.StatusOK, v)
}

// journalOf reads what a fold of a task's journal needs.
func (s *Server) journalOf(r *http.Request, id string) (workspace.Task, []workspace.JournalRecord, planLoader, error) {
	ctx := r.Context()
	task, err := s.st.GetTask(ctx, id)
	if err != nil {
		return task, nil, nil, err
	}
	recs, err := s.st.ReadJournal(ctx, id)
	if err != nil {
		return task, nil, nil, err
	}
	plans := func(v int) (*workspace.Plan, error) { return s.st.ReadPlan(ctx, id, v) }
	return task, recs, plans, nil
}

func (s *Server) gantt(w http.ResponseWriter, r *http.Request, id string) {
	task, recs, plans, err := s.journalOf(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	spans, err := Spans(task, plans, recs)
	answer(w, map[string]any{"spans": spans}, err)
}

// servingFor is how long the panel trusts its last look at whether a
// daemon serves the workspace: on a tree the look tries the daemon's
// lock, which a daemon starting at that instant would find taken, so the
// panel looks rarely.
const servingFor = 5 * time.Second

// servingProbe remembers the last look.
type servingProbe struct {
	mu      sync.Mutex
	at      time.Time
	serving bool
	known   bool
}

// ServingView is GET /api/serving. Known is false when the store cannot
// tell.
type ServingView struct {
	Serving bool `json:"serving"`
	Known   bool `json:"known"`
}

// serving says whether a daemon serves the store now, from the store's
// own answer (Serving, as its VerdictSource gives it).
func (s *Server) serving() ServingView {
	p := &s.servingProbe
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < servingFor {
		return ServingView{Serving: p.serving, Known: p.known}
	}
	var probe func() (bool, error)
	if st, ok := workspace.As[workspace.ServingReporter](s.st); ok {
		probe = st.Serving
	}
	p.at, p.known, p.serving = time.Now(), false, false
	if probe != nil {
		ok, err := probe()
		p.known, p.serving = err == nil, ok
	}
	return ServingView{Serving: p.serving, Known: p.known}
}

func (s *Server) getServing(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.serving())
}
