package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/workspaced/workspaced/workspace"
)

// Search within one task: its events, its outputs and its env data,
// case-insensitive substring, on the server, with a bounded number of
// hits.

// Bounds of a search.
const (
	defaultSearchLimit = 50
	maxSearchLimit     = 500
	maxQuery           = 200
	// snippetRunes is how much text a hit shows around the match.
	snippetRunes = 60
)

// SearchHit is one place the text was found. Kind is event, output or
// env; Ref the event's id, the output's subtask or the entry's key; Field
// where in it ("attrs.reason", "summary", "value.grid").
type SearchHit struct {
	Kind  string `json:"kind"`
	Ref   string `json:"ref"`
	Field string `json:"field"`
	Text  string `json:"text"`
}

// SearchResult is GET /api/tasks/{id}/search?q=: the first Limit hits;
// More says whether there were others.
type SearchResult struct {
	Query string      `json:"query"`
	Limit int         `json:"limit"`
	Hits  []SearchHit `json:"hits"`
	More  bool        `json:"more"`
}

// errFull stops a search once it has its hits.
var errFull = errors.New("enough hits")

// searcher collects hits up to a limit.
type searcher struct {
	q   string // lower case
	res *SearchResult
}

// match adds a hit when text holds the query; it fails with errFull once
// past the limit.
func (m *searcher) match(kind, ref, field, text string) error {
	lower := strings.ToLower(text)
	i := strings.Index(lower, m.q)
	if i < 0 {
		return nil
	}
	if len(m.res.Hits) == m.res.Limit {
		m.res.More = true
		return errFull
	}
	if len(lower) != len(text) { // lower-casing changed the lengths: show the lower text
		text = lower
	}
	m.res.Hits = append(m.res.Hits, SearchHit{Kind: kind, Ref: ref, Field: field, Text: snippet(text, i, len(m.q))})
	return nil
}

// snippet is text around the match at i (n bytes long), cut at rune
// boundaries.
func snippet(text string, i, n int) string {
	start, end := i, i+n
	for k := 0; k < snippetRunes && start > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	for k := 0; k < snippetRunes && end < len(text); k++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// leaves calls each for every string, number and boolean of a JSON
// value, with its dotted path.
func leaves(path string, v any, each func(path, text string) error) error {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := leaves(p, x[k], each); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := leaves(fmt.Sprintf("%s[%d]", path, i), e, each); err != nil {
				return err
			}
		}
	case nil:
	default:
		return each(path, fmt.Sprint(x))
	}
	return nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, id string) {
	limit, err := intParam(r, "limit", defaultSearchLimit, maxSearchLimit)
	if err != nil {
		fail(w, err)
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" || len(q) > maxQuery {
		fail(w, &workspace.Error{Kind: workspace.ErrInvalid, Op: "search", Msg: fmt.Sprintf("want q= of 1 to %d bytes", maxQuery)})
		return
	}
	res := SearchResult{Query: q, Limit: limit, Hits: []SearchHit{}}
	m := &searcher{q: strings.ToLower(q), res: &res}
	err = s.searchTask(r.Context(), id, m)
	if err != nil && !errors.Is(err, errFull) {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// searchTask looks through the task's events, then its outputs, then its
// env data.
func (s *Server) searchTask(ctx context.Context, id string, m *searcher) error {
	var stop error
	_, err := s.st.ReadEventsFrom(ctx, id, 0, func(e workspace.PositionedEvent) {
		if stop != nil {
			return
		}
		stop = searchEvent(m, eventID(id, e.End), e.Event)
	})
	if stop != nil {
		return stop
	}
	if err != nil {
		return err
	}
	if st, err := s.st.ReadState(ctx, id); err == nil {
		subs := make([]string, 0, len(st.Subtasks))
		for sid, ss := range st.Subtasks {
			if ss.Output != "" {
				subs = append(subs, sid)
			}
		}
		sort.Strings(subs)
		for _, sid := range subs {
			if err := s.searchDoc(ctx, m, "output", sid, func() (json.RawMessage, error) {
				return s.st.ReadTaskDoc(ctx, id, "outputs/"+sid+".json")
			}); err != nil {
				return err
			}
		}
	}
	scope := workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}
	items, err := s.st.ListEntries(ctx, scope)
	if err != nil && !isNotFound(err) {
		return err
	}
	for _, it := range items {
		for _, f := range [][2]string{{"key", it.Key}, {"description", it.ShortDescription}} {
			if err := m.match("env", it.Key, f[0], f[1]); err != nil {
				return err
			}
		}
		if err := s.searchDoc(ctx, m, "env", it.Key, func() (json.RawMessage, error) {
			e, err := s.st.GetEntry(ctx, scope, it.Key)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"value": e.Value})
		}); err != nil {
			return err
		}
	}
	return nil
}

func searchEvent(m *searcher, ref string, e workspace.Event) error {
	if err := m.match("event", ref, "event", e.Name); err != nil {
		return err
	}
	for i, a := range e.Args {
		if err := m.match("event", ref, fmt.Sprintf("args[%d]", i), a); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Attrs)) {
		if err := m.match("event", ref, "attrs."+k, k+"="+e.Attrs[k]); err != nil {
			return err
		}
	}
	return nil
}

// searchDoc searches the leaves of one JSON document; one that cannot be
// read is passed over (the tabs that show it say why).
func (s *Server) searchDoc(ctx context.Context, m *searcher, kind, ref string, read func() (json.RawMessage, error)) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	doc, err := read()
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	return leaves("", v, func(path, text string) error { return m.match(kind, ref, path, text) })
}
