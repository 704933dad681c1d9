-- A state written by a commit is stored as parts, so that a commit writes
-- what its markers changed, not the whole document: at 10,000 subtasks
-- the document is 504 KiB, and a commit copied the old one into backups,
-- sent the new one and updated the states row (its TOAST and WAL whole).
--
-- state_parts holds the parts: each the bytes of one piece of a document
-- as the encoder makes it (the shell between the entries, or a block of
-- 64 entries). The tables of rows (states and backups before, renamed
-- here: every constraint, index, trigger and grant goes with them) get
-- parts, the ids of a row's parts in the document's order; a row written
-- so has doc NULL, and its document is their bodies joined in that order.
-- A commit that follows the daemon's own row inserts only the parts
-- whose bytes changed and lists the others by id, and its backup is a
-- copy of the row: the ids, not the document.
--
-- replaced_at is the n of the newest backup row that still holds the
-- part (NULL: the state row holds it). The rows holding a part are
-- consecutive, so once the backup rows up to that n are deleted no row
-- holds it: retention deletes the parts replaced at or before the newest
-- backup row it deleted, by (task_id, replaced_at).
--
-- Rows written whole (a task of fewer than 512 entries; imports,
-- restores, a task's first state, the rows from before this migration,
-- none of which is rewritten) keep their doc and no parts. The states
-- and backups views give every column as the tables did, doc the
-- document either way: readers see no change (docs/PROTOCOL.md, section
-- 11). What wrote them before still does, through their triggers, as
-- whole rows.
ALTER TABLE states RENAME TO state_rows;
ALTER TABLE backups RENAME TO backup_rows;

ALTER TABLE state_rows ALTER COLUMN doc DROP NOT NULL;
ALTER TABLE state_rows ADD COLUMN parts bigint[];
ALTER TABLE state_rows ADD CONSTRAINT state_rows_doc CHECK (doc IS NOT NULL OR parts IS NOT NULL);
ALTER TABLE backup_rows ALTER COLUMN doc DROP NOT NULL;
ALTER TABLE backup_rows ADD COLUMN parts bigint[];
ALTER TABLE backup_rows ADD CONSTRAINT backup_rows_doc CHECK (doc IS NOT NULL OR parts IS NOT NULL);

CREATE TABLE state_parts (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id     text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  replaced_at bigint,
  body        text NOT NULL
);
CREATE INDEX state_parts_replaced ON state_parts (task_id, replaced_at);

-- The views' doc: doc, or the row's parts' bodies joined in order. It is
-- written out in each view, not as a function: a view reads state_parts
-- with its owner's rights, a function with its caller's (an agent's).
CREATE VIEW states AS
  SELECT task_id, journal_seq, coalesce(doc, (SELECT string_agg(p.body, '' ORDER BY u.ord)
      FROM unnest(s.parts) WITH ORDINALITY u(id, ord) JOIN state_parts p ON p.id = u.id)) AS doc,
    epoch, updated_at, version
  FROM state_rows s;
ALTER VIEW states ALTER COLUMN updated_at SET DEFAULT now();
ALTER VIEW states ALTER COLUMN version SET DEFAULT 0;

CREATE VIEW backups AS
  SELECT task_id, n, journal_seq, coalesce(doc, (SELECT string_agg(p.body, '' ORDER BY u.ord)
      FROM unnest(b.parts) WITH ORDINALITY u(id, ord) JOIN state_parts p ON p.id = u.id)) AS doc,
    saved_at, name
  FROM backup_rows b;
ALTER VIEW backups ALTER COLUMN saved_at SET DEFAULT now();
ALTER VIEW backups ALTER COLUMN name SET DEFAULT '';

-- state_parts_settle sets the parts of task t in schema sc after a row
-- was written or deleted otherwise than by a commit: a part no row holds
-- goes, the others are replaced at the newest backup row holding them,
-- or not replaced while the state row holds them. The functions here
-- name the tables by the schema of the view they serve (TG_TABLE_SCHEMA),
-- whatever the writer's search_path.
CREATE FUNCTION state_parts_settle(sc text, t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format($q$
    WITH held AS (
      SELECT u.id, max(b.n) AS last FROM %1$I.backup_rows b, unnest(b.parts) u(id) WHERE b.task_id = $1 GROUP BY u.id
      UNION ALL
      SELECT u.id, NULL FROM %1$I.state_rows s, unnest(s.parts) u(id) WHERE s.task_id = $1
    ), latest AS (
      SELECT id, CASE WHEN bool_or(last IS NULL) THEN NULL ELSE max(last) END AS last FROM held GROUP BY id
    ), gone AS (
      DELETE FROM %1$I.state_parts p WHERE p.task_id = $1 AND NOT EXISTS (SELECT 1 FROM latest l WHERE l.id = p.id)
    )
    UPDATE %1$I.state_parts p SET replaced_at = l.last FROM latest l
      WHERE p.task_id = $1 AND p.id = l.id AND p.replaced_at IS DISTINCT FROM l.last$q$, sc) USING t;
END $$;

-- Writes through the views are whole rows: doc as given, parts NULL (an
-- update that leaves doc as it was leaves the row's doc and parts).
CREATE FUNCTION states_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE format('INSERT INTO %I.state_rows (task_id, journal_seq, doc, epoch, updated_at, version) VALUES ($1, $2, $3, $4, $5, $6)', TG_TABLE_SCHEMA)
      USING NEW.task_id, NEW.journal_seq, NEW.doc, NEW.epoch, coalesce(NEW.updated_at, now()), coalesce(NEW.version, 0);
    RETURN NEW;
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW.doc IS NOT DISTINCT FROM OLD.doc THEN
      EXECUTE format('UPDATE %I.state_rows SET task_id = $1, journal_seq = $2, epoch = $3, updated_at = $4, version = $5 WHERE task_id = $6', TG_TABLE_SCHEMA)
        USING NEW.task_id, NEW.journal_seq, NEW.epoch, NEW.updated_at, NEW.version, OLD.task_id;
    ELSE
      EXECUTE format('UPDATE %I.state_rows SET task_id = $1, journal_seq = $2, epoch = $3, updated_at = $4, version = $5, doc = $7, parts = NULL WHERE task_id = $6', TG_TABLE_SCHEMA)
        USING NEW.task_id, NEW.journal_seq, NEW.epoch, NEW.updated_at, NEW.version, OLD.task_id, NEW.doc;
      EXECUTE format('SELECT %I.state_parts_settle($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, OLD.task_id;
    END IF;
    RETURN NEW;
  END IF;
  EXECUTE format('DELETE FROM %I.state_rows WHERE task_id = $1', TG_TABLE_SCHEMA) USING OLD.task_id;
  EXECUTE format('SELECT %I.state_parts_settle($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, OLD.task_id;
  RETURN OLD;
END $$;
CREATE TRIGGER states_write INSTEAD OF INSERT OR UPDATE OR DELETE ON states
  FOR EACH ROW EXECUTE FUNCTION states_write();

CREATE FUNCTION backups_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE format('INSERT INTO %I.backup_rows (task_id, journal_seq, doc, saved_at, name) VALUES ($1, $2, $3, $4, $5) RETURNING n', TG_TABLE_SCHEMA)
      INTO NEW.n USING NEW.task_id, NEW.journal_seq, NEW.doc, coalesce(NEW.saved_at, now()), coalesce(NEW.name, '');
    RETURN NEW;
  ELSIF TG_OP = 'UPDATE' THEN
    IF NEW.n IS DISTINCT FROM OLD.n THEN
      RAISE EXCEPTION 'column "n" can only be updated to DEFAULT' USING ERRCODE = 'generated_always';
    END IF;
    IF NEW.doc IS NOT DISTINCT FROM OLD.doc THEN
      EXECUTE format('UPDATE %I.backup_rows SET task_id = $1, journal_seq = $2, saved_at = $3, name = $4 WHERE task_id = $5 AND n = $6', TG_TABLE_SCHEMA)
        USING NEW.task_id, NEW.journal_seq, NEW.saved_at, NEW.name, OLD.task_id, OLD.n;
    ELSE
      EXECUTE format('UPDATE %I.backup_rows SET task_id = $1, journal_seq = $2, saved_at = $3, name = $4, doc = $7, parts = NULL WHERE task_id = $5 AND n = $6', TG_TABLE_SCHEMA)
        USING NEW.task_id, NEW.journal_seq, NEW.saved_at, NEW.name, OLD.task_id, OLD.n, NEW.doc;
      EXECUTE format('SELECT %I.state_parts_settle($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, OLD.task_id;
    END IF;
    RETURN NEW;
  END IF;
  EXECUTE format('DELETE FROM %I.backup_rows WHERE task_id = $1 AND n = $2', TG_TABLE_SCHEMA) USING OLD.task_id, OLD.n;
  EXECUTE format('SELECT %I.state_parts_settle($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, OLD.task_id;
  RETURN OLD;
END $$;
CREATE TRIGGER backups_write INSTEAD OF INSERT OR UPDATE OR DELETE ON backups
  FOR EACH ROW EXECUTE FUNCTION backups_write();

-- The rights on the tables were the rights on the states and backups:
-- each grantee (the agent role reads, the daemon role writes) has the
-- same on the views, and a role that writes the states rows writes the
-- parts. The agent role keeps what it had on the tables (their rows,
-- read) and gets nothing on the parts: the views read them with their
-- owner's rights.
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT c.relname, a.grantee, a.privilege_type
      FROM pg_class c, aclexplode(c.relacl) a
      WHERE c.oid IN ('state_rows'::regclass, 'backup_rows'::regclass) AND a.grantee <> c.relowner LOOP
    EXECUTE format('GRANT %s ON %I TO %s', g.privilege_type, CASE g.relname WHEN 'state_rows' THEN 'states' ELSE 'backups' END,
      CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END);
    IF g.relname = 'state_rows' AND g.privilege_type = 'INSERT' THEN
      EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON state_parts TO %s',
        CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END);
      EXECUTE format('GRANT USAGE, SELECT ON SEQUENCE %s TO %s', pg_get_serial_sequence('state_parts', 'id'),
        CASE g.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g.grantee)) END);
    END IF;
  END LOOP;
END $$;
