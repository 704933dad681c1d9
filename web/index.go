package web

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// The index is the tasks page's summary of every task: one small record
// per task, built once when Run starts and kept up to date by the watcher
// from the tasks that change, so that listing 10,000 tasks reads no file.

// Summary is one task as the tasks list shows it.
type Summary struct {
	ID             string    `json:"id"`
	Description    string    `json:"description"`
	CreatedAt      time.Time `json:"created_at"`
	Status         string    `json:"status"`
	Phase          string    `json:"phase,omitempty"`
	PlanStatus     string    `json:"plan_status,omitempty"`
	SubtasksDone   int       `json:"subtasks_done"`
	SubtasksTotal  int       `json:"subtasks_total"`
	LastUpdated    time.Time `json:"last_updated"`
	Error          string    `json:"error,omitempty"`
	searchableText string
}

type index struct {
	mu    sync.RWMutex
	tasks map[string]*Summary
}

func newIndex() *index { return &index{tasks: map[string]*Summary{}} }

// summarize reads one task's summary through the store. ok is false
// when the task is gone (or not yet whole: task.json not written).
func summarize(ctx context.Context, ws workspace.Reader, id string) (Summary, bool) {
	t, err := ws.GetTask(ctx, id)
	if err != nil {
		if isNotFound(err) {
			return Summary{}, false
		}
		return Summary{ID: id, Status: "unreadable", Error: err.Error()}, true
	}
	s := Summary{ID: id, Description: t.Description, CreatedAt: t.CreatedAt, Status: "waiting", LastUpdated: t.CreatedAt}
	st, err := ws.ReadState(ctx, id)
	switch {
	case err == nil:
		s.Status, s.Phase, s.PlanStatus, s.LastUpdated = st.Status, st.Phase, st.PlanStatus, st.LastUpdated
		s.SubtasksTotal = len(st.Subtasks)
		for _, ss := range st.Subtasks {
			if ss.Status == "completed" {
				s.SubtasksDone++
			}
		}
	case !isNotFound(err):
		s.Error = err.Error()
	}
	return s, true
}

func (x *index) put(s Summary) {
	s.searchableText = strings.ToLower(s.ID + "\n" + s.Description)
	x.mu.Lock()
	x.tasks[s.ID] = &s
	x.mu.Unlock()
}

func (x *index) remove(id string) {
	x.mu.Lock()
	delete(x.tasks, id)
	x.mu.Unlock()
}

func (x *index) get(id string) (Summary, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.tasks[id]
	if !ok {
		return Summary{}, false
	}
	return *s, true
}

// TaskPage is GET /api/tasks: one page of the tasks that match, newest
// update first, with the count of every status among all that match the
// text.
//
// Paged by after= (a task id), the page is in id order, Total is -1 (not
// counted), and Next is the cursor of the next page ("" on the last).
type TaskPage struct {
	Total  int            `json:"total"`
	Offset int            `json:"offset"`
	Limit  int            `json:"limit"`
	After  string         `json:"after,omitempty"`
	Next   string         `json:"next,omitempty"`
	Counts map[string]int `json:"counts"`
	Tasks  []Summary      `json:"tasks"`
}

// counts is how many tasks of each status hold text (lower case).
func (x *index) counts(text string) map[string]int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	counts := map[string]int{}
	for _, s := range x.tasks {
		if text == "" || strings.Contains(s.searchableText, text) {
			counts[s.Status]++
		}
	}
	return counts
}

func (x *index) query(status, text string, offset, limit int) TaskPage {
	text = strings.ToLower(strings.TrimSpace(text))
	x.mu.RLock()
	var hits []*Summary
	counts := map[string]int{}
	for _, s := range x.tasks {
		if text != "" && !strings.Contains(s.searchableText, text) {
			continue
		}
		counts[s.Status]++
		if status == "" || s.Status == status {
			hits = append(hits, s)
		}
	}
	x.mu.RUnlock()
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if !a.LastUpdated.Equal(b.LastUpdated) {
			return a.LastUpdated.After(b.LastUpdated)
		}
		return a.ID < b.ID
	})
	p := TaskPage{Total: len(hits), Offset: offset, Limit: limit, Counts: counts, Tasks: []Summary{}}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		p.Tasks = append(p.Tasks, *hits[i])
	}
	return p
}
