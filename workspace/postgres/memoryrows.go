package postgres

import (
	"bytes"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// A batch of plain puts (no compare-and-set) of distinct items is one
// statement over arrays of their columns: one upsert of every row and
// one insert of every event, in the puts' order. A statement per put
// costs PostgreSQL a plan's execution each, which is most of a batch's
// time on the server; the rows take one. A batch with a compare-and-set
// or an item put twice keeps a statement per put (memoryStatement): a
// put's version there depends on the puts before it.

// memoryRowsUpsert is memoryUpsert over the arrays of memoryRows, its
// events placed together at the greatest event_xid of its rows (after
// every earlier put of each item, and in the batch's order):
// $1–$7 the rows' ns_key, key, namespace, expires_at, stored_by, and the
// event line's head and tail around the version; $8 the time; $9 and $10
// the batch's grant guard (guardAt); $11 the values. The values, most of
// a batch's bytes, come last as one text joined by valueSep: one
// parameter pgx appends to its buffers at once, where an array's
// elements, or parameters after it, grew them again and again.
var memoryRowsUpsert = `WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], string_to_array($11::text, E'\x01'), $6::text[], $7::text[])
			WITH ORDINALITY AS r(ns_key, key, namespace, expires_at, stored_by, value, head, tail, ord)),
		up AS (INSERT INTO memory_items AS m (ns_key, key, namespace, version, created_at, updated_at, expires_at, stored_by, value)
			SELECT ns_key, key, namespace, 1, $8, $8, expires_at, stored_by, value FROM r WHERE ` + guardAt(9) + ` ORDER BY ord
			ON CONFLICT (ns_key, key) DO UPDATE SET
				version = CASE WHEN m.expires_at IS NULL OR m.expires_at > $8 THEN m.version + 1 ELSE 1 END,
				created_at = CASE WHEN m.expires_at IS NULL OR m.expires_at > $8 THEN m.created_at ELSE excluded.created_at END,
				updated_at = excluded.updated_at, expires_at = excluded.expires_at, stored_by = excluded.stored_by,
				value = excluded.value
			RETURNING ns_key, key, created_at, version, event_xid),
		ev AS (INSERT INTO memory_events (time, line, xid)
			SELECT $8, r.head || up.version || r.tail, (SELECT max(event_xid) FROM up) FROM up JOIN r USING (ns_key, key) ORDER BY r.ord)
		SELECT r.ord, up.created_at, up.version FROM up JOIN r USING (ns_key, key)`

// valueSep joins the batch's values in memoryRowsUpsert's $6: a byte no
// compact JSON text holds (a control character is escaped in a string,
// and there is no space outside one).
const valueSep = 0x01

// memoryRows is a batch's puts as the columns of memoryRowsUpsert, and
// whether the batch is one it serves: every put plain, no item twice, no
// value holding valueSep (none compacted does; a statement a put takes
// any that would).
type memoryRows struct {
	nsKey, key, namespace, storedBy, head, tail []string
	value                                       []byte
	expires                                     []*time.Time
	at                                          time.Time
	guard                                       workspace.GrantGuard
}

func memoryRowsOf(ps []sqlstore.MemoryPut) (memoryRows, bool) {
	n := len(ps)
	r := memoryRows{nsKey: make([]string, n), key: make([]string, n), namespace: make([]string, n), storedBy: make([]string, n),
		head: make([]string, n), tail: make([]string, n), expires: make([]*time.Time, n)}
	type item struct{ nk, key string }
	seen := make(map[item]bool, n)
	for i, p := range ps {
		req := &p.Req
		if req.IfVersion > 0 || req.IfAbsent || seen[item{p.NSKey, req.Key}] || !p.At.Equal(ps[0].At) || bytes.IndexByte(p.Value, valueSep) >= 0 {
			return memoryRows{}, false
		}
		seen[item{p.NSKey, req.Key}] = true
		r.nsKey[i], r.key[i], r.namespace[i], r.storedBy[i] = p.NSKey, req.Key, req.Namespace.String(), req.Agent
		r.head[i], r.tail[i] = p.EventAround()
		r.expires[i] = p.Expires()
	}
	size := 0
	for _, p := range ps {
		size += len(p.Value) + 1
	}
	r.value = make([]byte, 0, size)
	for i, p := range ps {
		if i > 0 {
			r.value = append(r.value, valueSep)
		}
		r.value = append(r.value, p.Value...)
	}
	r.at, r.guard = ps[0].At, ps[0].Guard
	return r, true
}

func (r memoryRows) statement() (string, []any) {
	sum, doc := guardArgs(r.guard)
	return memoryRowsUpsert, []any{r.nsKey, r.key, r.namespace, r.expires, r.storedBy, r.head, r.tail, r.at, sum, doc, r.value}
}

// read fills out, in the puts' order, from the statement's rows: one a
// put, each written.
func (r memoryRows) read(br pgx.BatchResults, out []sqlstore.MemoryWritten) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var (
		ord  int64
		w    sqlstore.MemoryWritten
		seen int
	)
	_, err = pgx.ForEachRow(rows, []any{&ord, &w.Created, &w.Version}, func() error {
		if ord < 1 || int(ord) > len(out) {
			return fmt.Errorf("the batch's statement answered put %d of %d", ord, len(out))
		}
		out[ord-1] = w
		seen++
		return nil
	})
	if err == nil && seen != len(out) {
		err = fmt.Errorf("the batch's statement wrote %d of its %d puts", seen, len(out))
	}
	return err
}
