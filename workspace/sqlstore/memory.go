package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.MemoryStore = (*Store)(nil)

// Namespaced memory is rows of memory_items keyed by ns_key
// (workspace.Namespace.Sortable) and key: a search under a prefix is a
// range of the key, in its order. A put is one write, each driver's own
// (Driver.PutMemory): the item's row judged as workspace.ApplyPut does,
// written, and its event appended to memory_events, read as the tasks'
// events are (eventrows.go); on PostgreSQL that is one statement.

const itemColumns = "ns_key, key, version, created_at, updated_at, expires_at, value"

// MemoryPut is one item to store (Driver.PutMemory): the request,
// checked, its value compacted, at At; the event is the put's
// memory_stored, attributed to the request's token. Guard is the grant
// guard of the request's context (workspace.GrantGuardOf; zero for
// none), which a driver whose store is workspace.GrantGuarding checks in
// the put's statement.
type MemoryPut struct {
	Req   workspace.MemoryPutRequest
	NSKey string
	Value []byte
	At    time.Time
	Guard workspace.GrantGuard
	event workspace.Event
}

// EventLine is the line of the put's event when it makes version.
func (p MemoryPut) EventLine(version int) string {
	head, tail := p.EventAround()
	return head + strconv.Itoa(version) + tail
}

// EventAround is the line of the put's event around its version, for a
// statement that learns the version as it writes: the line of version v
// is head + v + tail.
func (p MemoryPut) EventAround() (head, tail string) {
	return workspace.FormatEventAround(p.event, "version")
}

// NewMemoryPut is the put of req, checked (workspace.CheckMemoryPut), at
// t: its value compacted, its event attributed to ctx's token.
func NewMemoryPut(ctx context.Context, req workspace.MemoryPutRequest, t time.Time) (MemoryPut, error) {
	value, ok := compactValue(req.Value)
	if !ok {
		var b bytes.Buffer
		if err := json.Compact(&b, req.Value); err != nil {
			return MemoryPut{}, workspace.FieldErr(workspace.ErrInvalid, "value", workspace.FieldValue, "give a JSON object", "%v", err)
		}
		value = b.Bytes()
	}
	return newMemoryPut(ctx, req, value, t), nil
}

// newMemoryPut is the put of req at t, its value already compacted
// (workspace.CompactMemoryPut).
func newMemoryPut(ctx context.Context, req workspace.MemoryPutRequest, value []byte, t time.Time) MemoryPut {
	guard, _ := workspace.GrantGuardOf(ctx)
	e := workspace.MemoryEvent("stored", req.Namespace, req.Key, req.Agent, 1, t)
	if id := workspace.TokenOf(ctx); id != "" {
		// workspace.Attributed, in the map MemoryEvent made for e alone.
		e.Attrs[workspace.EventToken] = id
	}
	return MemoryPut{Req: req, NSKey: req.Namespace.Sortable(), Value: value, At: t, Guard: guard, event: e}
}

// Expires is the put's expiry (nil for none).
func (p MemoryPut) Expires() *time.Time { return workspace.ExpiresAt(p.At, p.Req.TTLSeconds) }

// PutMemory creates or replaces an item, with its event, in one write.
func (s *Store) PutMemory(ctx context.Context, req workspace.MemoryPutRequest) (workspace.MemoryItem, error) {
	value, err := workspace.CompactMemoryPut(req, s.settings.Limits, compactValue)
	if err != nil {
		return workspace.MemoryItem{}, err
	}
	t := Now()
	p := newMemoryPut(ctx, req, value, t)
	created, version, err := s.d.PutMemory(ctx, p)
	if err != nil {
		return workspace.MemoryItem{}, ReadErr(fmt.Sprintf("put memory %s %q", req.Namespace, req.Key), err)
	}
	return p.Item(created, version), nil
}

// PutMemoryIn is Driver.PutMemory in a write transaction tx where the
// row read holds the item until the end (SQLite's one writer): the row
// read, judged (workspace.ApplyPut), written, and its event appended.
func PutMemoryIn(ctx context.Context, tx Executor, dl Dialect, p MemoryPut) (time.Time, int, error) {
	req := p.Req
	cur, err := readItem(ctx, tx, dl, p.NSKey, req.Key, dl.Lock("UPDATE"))
	if err != nil {
		return time.Time{}, 0, err
	}
	it, err := workspace.ApplyPut(cur, req, p.At)
	if err != nil {
		return time.Time{}, 0, err
	}
	var exp any
	if it.ExpiresAt != nil {
		exp = dl.Time(*it.ExpiresAt)
	}
	if cur == nil {
		_, err = tx.Exec(ctx, `INSERT INTO memory_items (ns_key, key, namespace, version, created_at, updated_at, expires_at, stored_by, value)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, p.NSKey, req.Key, req.Namespace.String(), it.Version, dl.Time(it.CreatedAt), dl.Time(p.At), exp, req.Agent, string(it.Value))
	} else {
		_, err = tx.Exec(ctx, `UPDATE memory_items SET version = $3, created_at = $4, updated_at = $5, expires_at = $6, stored_by = $7, value = $8
		WHERE ns_key = $1 AND key = $2`, p.NSKey, req.Key, it.Version, dl.Time(it.CreatedAt), dl.Time(p.At), exp, req.Agent, string(it.Value))
	}
	if err != nil {
		return time.Time{}, 0, err
	}
	_, err = tx.Exec(ctx, "INSERT INTO memory_events (time, line) VALUES ($1, $2)", dl.Time(p.At), p.EventLine(it.Version))
	return it.CreatedAt, it.Version, err
}

// GetMemory reads one live item.
func (s *Store) GetMemory(ctx context.Context, ns workspace.Namespace, key string) (workspace.MemoryItem, error) {
	return s.GetMemoryWhere(ctx, ns, key, "")
}

// GetMemoryWhere is GetMemory with cond a condition of the item's
// SELECT beside the item's own ($1 and $2), its arguments args from $3
// on: a driver's get guarded by a grant.
func (s *Store) GetMemoryWhere(ctx context.Context, ns workspace.Namespace, key, cond string, args ...any) (workspace.MemoryItem, error) {
	if err := workspace.CheckMemoryGet(ns, key); err != nil {
		return workspace.MemoryItem{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if cond != "" {
		cond = " AND " + cond
	}
	it, err := readItem(ctx, s.r, s.dl, ns.Sortable(), key, cond, args...)
	if err != nil {
		return workspace.MemoryItem{}, ReadErr(fmt.Sprintf("get memory %s %q", ns, key), err)
	}
	if it == nil || !it.Live(Now()) {
		return workspace.MemoryItem{}, workspace.NoSuchItem("get", ns, key)
	}
	return *it, nil
}

// DeleteMemory removes a live item, with its event, in one write.
func (s *Store) DeleteMemory(ctx context.Context, req workspace.MemoryDeleteRequest) error {
	if err := workspace.CheckMemoryDelete(req); err != nil {
		return err
	}
	nk := req.Namespace.Sortable()
	err := s.d.Write(ctx, func(tx Executor) error {
		cur, err := s.readItem(ctx, tx, nk, req.Key, s.dl.Lock("UPDATE"))
		if err != nil {
			return err
		}
		t := Now()
		if err := workspace.ApplyDelete(cur, req, t); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM memory_items WHERE ns_key = $1 AND key = $2", nk, req.Key); err != nil {
			return err
		}
		return s.memoryEvent(ctx, tx, workspace.MemoryEvent("deleted", req.Namespace, req.Key, req.Agent, 0, t))
	})
	if err != nil {
		return ReadErr(fmt.Sprintf("delete memory %s %q", req.Namespace, req.Key), err)
	}
	return nil
}

// SearchMemory reads the live items under the prefix in order; without
// a filter the database pages them, with one the store reads on until
// the page is full.
func (s *Store) SearchMemory(ctx context.Context, req workspace.MemorySearchRequest) ([]workspace.MemoryItem, error) {
	req, err := workspace.CheckSearch(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	where, args := s.liveUnder(req.Prefix)
	q := "SELECT " + itemColumns + " FROM memory_items WHERE " + where + " ORDER BY ns_key" + s.dl.Collate + ", key" + s.dl.Collate
	if req.Filter.Empty() {
		q += fmt.Sprintf(" LIMIT %d OFFSET %d", req.Limit, req.Offset)
	}
	out := []workspace.MemoryItem{}
	skip := req.Offset
	err = s.d.Read(ctx, func(tx Executor) error {
		out, skip = out[:0], req.Offset
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			it, err := s.scanItem(rows)
			if err != nil {
				return err
			}
			if !req.Filter.Empty() {
				if !req.Filter.Match(it.Value) {
					continue
				}
				if skip > 0 {
					skip--
					continue
				}
			}
			out = append(out, it)
			if len(out) == req.Limit {
				return nil
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, ReadErr("search memory", err)
	}
	return out, nil
}

// ListMemoryNamespaces lists the namespaces that hold live items.
func (s *Store) ListMemoryNamespaces(ctx context.Context, q workspace.NamespaceQuery) ([]workspace.Namespace, error) {
	q, err := workspace.CheckNamespaceQuery(q)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	var lit []string // the prefix's labels before its first wildcard
	for _, l := range q.Prefix {
		if l == workspace.Wildcard {
			break
		}
		lit = append(lit, l)
	}
	where, args := s.liveUnder(lit)
	keys, err := Strings(s.r.Query(ctx, "SELECT DISTINCT ns_key FROM memory_items WHERE "+where, args...))
	if err != nil {
		return nil, ReadErr("list memory namespaces", err)
	}
	all := make([]workspace.Namespace, 0, len(keys))
	for _, k := range keys {
		ns, err := workspace.ParseSortable(k)
		if err != nil {
			return nil, fmt.Errorf("list memory namespaces: %w", err)
		}
		all = append(all, ns)
	}
	return workspace.ListNamespaces(all, q), nil
}

// PruneMemory removes the items expired at now.
func (s *Store) PruneMemory(ctx context.Context, now time.Time, dryRun bool) (int, error) {
	var n int64
	var err error
	if dryRun {
		err = s.r.QueryRow(ctx, "SELECT count(*) FROM memory_items WHERE expires_at <= $1", s.dl.Time(now)).Scan(&n)
	} else {
		n, err = s.d.WriteOne(ctx, "DELETE FROM memory_items WHERE expires_at <= $1", s.dl.Time(now))
	}
	if err != nil {
		return 0, ReadErr("remove expired memory", err)
	}
	return int(n), nil
}

// ReadMemoryEvents reads memory_events after the row of id pos, in the
// dialect's EventOrder, as ReadEventsFrom reads a task's.
func (s *Store) ReadMemoryEvents(ctx context.Context, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	if pos < 0 {
		return pos, workspace.Invalidf("read memory events", "read from 0, or from a position a read gave back", "negative position %d", pos)
	}
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	type row struct {
		id   int64
		line string
	}
	q, err := s.r.Query(ctx, "SELECT id, line FROM memory_events WHERE "+s.dl.EventsAfter("memory_events", "$1")+" ORDER BY "+s.dl.EventOrder, pos)
	rows, err := Collect(q, err, func(r Rows) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.line)
	})
	if err != nil {
		return pos, ReadErr("read memory events", err)
	}
	prev := pos
	for _, r := range rows {
		if e, perr := workspace.ParseEvent(r.line); perr == nil {
			each(workspace.PositionedEvent{Event: e, Start: prev, End: r.id})
		}
		prev = r.id
	}
	return prev, nil
}

func (s *Store) memoryEvent(ctx context.Context, tx Executor, e workspace.Event) error {
	_, err := tx.Exec(ctx, "INSERT INTO memory_events (time, line) VALUES ($1, $2)", s.dl.Time(e.Time), workspace.FormatEvent(workspace.Attributed(ctx, e)))
	return err
}

// liveUnder is the condition selecting the items live now whose
// namespace starts with prefix, and its arguments.
func (s *Store) liveUnder(prefix []string) (string, []any) {
	where := "(expires_at IS NULL OR expires_at > $1)"
	args := []any{s.dl.Time(Now())}
	if len(prefix) > 0 {
		low := workspace.Namespace(prefix).Sortable()
		high := low[:len(low)-1] + "\x02"
		where += " AND ns_key >= $2 AND ns_key < $3"
		args = append(args, low, high)
	}
	return where, args
}

// readItem reads the item's row (nil when none), expired or not, with
// lock ending the SELECT.
func (s *Store) readItem(ctx context.Context, q Executor, nk, key, lock string) (*workspace.MemoryItem, error) {
	return readItem(ctx, q, s.dl, nk, key, lock)
}

func readItem(ctx context.Context, q Executor, dl Dialect, nk, key, tail string, args ...any) (*workspace.MemoryItem, error) {
	rows, err := q.Query(ctx, "SELECT "+itemColumns+" FROM memory_items WHERE ns_key = $1 AND key = $2"+tail, append([]any{nk, key}, args...)...)
	items, err := Collect(rows, err, func(r Rows) (workspace.MemoryItem, error) { return scanItem(dl, r) })
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return &items[0], nil
}

func (s *Store) scanItem(r Rows) (workspace.MemoryItem, error) { return scanItem(s.dl, r) }

func scanItem(dl Dialect, r Rows) (workspace.MemoryItem, error) {
	var (
		it       workspace.MemoryItem
		nk, val  string
		exp      time.Time
		from, to time.Time
	)
	if err := r.Scan(&nk, &it.Key, &it.Version, dl.ScanTime(&from), dl.ScanTime(&to), dl.ScanNullTime(&exp), &val); err != nil {
		return it, err
	}
	ns, err := workspace.ParseSortable(nk)
	if err != nil {
		return it, err
	}
	it.Namespace, it.CreatedAt, it.UpdatedAt, it.Value = ns, from.UTC(), to.UTC(), json.RawMessage(strings.Clone(val))
	if !exp.IsZero() {
		e := exp.UTC()
		it.ExpiresAt = &e
	}
	return it, nil
}
