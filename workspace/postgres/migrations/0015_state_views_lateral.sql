-- The states and backups views of 0014_state_parts join a row's parts
-- as a LATERAL subquery rather than a scalar one: the same columns and
-- documents, but a document read in parts reaches the client in a few
-- milliseconds at 10,000 subtasks rather than tens (a scalar subquery's
-- 500 KiB result is slow to hand on, docs/PERFORMANCE.md). A read that
-- does not name doc does not join the parts at all: the planner removes
-- the join, which yields one row. The views' triggers and grants stay
-- (CREATE OR REPLACE). A locking read (FOR UPDATE) through them is
-- refused now ("the nullable side of an outer join"): lock state_rows.
CREATE OR REPLACE VIEW states AS
  SELECT s.task_id, s.journal_seq, coalesce(s.doc, a.doc) AS doc, s.epoch, s.updated_at, s.version
  FROM state_rows s LEFT JOIN LATERAL (SELECT string_agg(p.body, '' ORDER BY u.ord) AS doc
    FROM unnest(s.parts) WITH ORDINALITY u(id, ord) JOIN state_parts p ON p.id = u.id) a ON true;

CREATE OR REPLACE VIEW backups AS
  SELECT b.task_id, b.n, b.journal_seq, coalesce(b.doc, a.doc) AS doc, b.saved_at, b.name
  FROM backup_rows b LEFT JOIN LATERAL (SELECT string_agg(p.body, '' ORDER BY u.ord) AS doc
    FROM unnest(b.parts) WITH ORDINALITY u(id, ord) JOIN state_parts p ON p.id = u.id) a ON true;
