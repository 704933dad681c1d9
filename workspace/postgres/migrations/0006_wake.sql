-- Waking the daemon without a notification per marker. A notifying
-- transaction's commit is serialized with every other notifying commit
-- (PostgreSQL holds a lock through its flush), so agents inserting at
-- once could not share WAL flushes. The daemon says here whether it is
-- waiting on LISTEN (listening) or taking markers (awake); only a marker
-- inserted while it listens notifies.
--
-- No wake-up is lost: the trigger takes the schema's wake lock SHARED
-- before it reads the flag, and holds it to its transaction's end. A
-- daemon going back to LISTEN commits listening = true, then takes the
-- same lock EXCLUSIVE and releases it at once — which waits for every
-- inserting transaction that may have read false — and only then looks
-- for markers a last time. An insert either committed before that look
-- (it is found), or read the flag after the exclusive lock, so saw true
-- and notifies.
CREATE TABLE wake (
  id        integer PRIMARY KEY CHECK (id = 1),
  listening boolean NOT NULL
);
INSERT INTO wake (id, listening) VALUES (1, true);

-- One notification per task per statement (the payload is the task's
-- id), only while the daemon listens. A transaction that is not READ
-- COMMITTED may read the flag from a snapshot older than the daemon's
-- return to LISTEN: it always notifies.
CREATE OR REPLACE FUNCTION markers_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t text;
  listening boolean;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext('workspaced wake'), hashtext(TG_TABLE_SCHEMA));
  IF current_setting('transaction_isolation') = 'read committed' THEN
    -- The inserting session's search_path need not name the schema.
    EXECUTE format('SELECT listening FROM %I.wake WHERE id = 1', TG_TABLE_SCHEMA) INTO listening;
    IF NOT listening THEN
      RETURN NULL;
    END IF;
  END IF;
  FOR t IN SELECT DISTINCT task_id FROM inserted LOOP
    PERFORM pg_notify('workspaced_markers_' || TG_TABLE_SCHEMA, t);
  END LOOP;
  RETURN NULL;
END $$;
DROP TRIGGER markers_notify ON markers;
CREATE TRIGGER markers_notify AFTER INSERT ON markers
  REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION markers_notify();

-- The roles made before this table existed get their rights on it: who
-- may insert markers reads the flag (the trigger runs with the inserting
-- role's rights), who may update states (the daemon) sets it.
DO $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT DISTINCT a.grantee::regrole::text AS role, a.privilege_type AS priv
      FROM pg_class c, aclexplode(c.relacl) a
      WHERE c.oid IN ('markers'::regclass, 'states'::regclass) AND a.grantee <> 0
        AND a.grantee <> c.relowner
        AND ((c.oid = 'markers'::regclass AND a.privilege_type = 'INSERT')
          OR (c.oid = 'states'::regclass AND a.privilege_type = 'UPDATE')) LOOP
    IF g.priv = 'INSERT' THEN
      EXECUTE format('GRANT SELECT ON wake TO %s', g.role);
    ELSE
      EXECUTE format('GRANT SELECT, UPDATE ON wake TO %s', g.role);
    END IF;
  END LOOP;
END $$;
