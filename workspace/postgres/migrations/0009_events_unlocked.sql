-- Events in an order every reader agrees on, without the schema-wide
-- lock of 0004 and 0007: writers no longer wait for each other's
-- commit. Every event row carries the id of the transaction that wrote
-- it (xid, given by the column's default), and a reader reads only the
-- rows whose transaction is older than every transaction still running
-- (xid < pg_snapshot_xmin(pg_current_snapshot())): those can never be
-- joined by another row of a lower (xid, id). So a reader that goes on
-- from the last (xid, id) it read, in (xid, id) order, never skips an
-- event whose transaction commits late, nor reads one twice; an event
-- waits for the transactions older than its own to end. The rows from
-- before have xid 0: they were in commit order by id already.
DROP TRIGGER events_order ON events;
DROP FUNCTION events_order();
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX events_xid ON events (xid, id);
CREATE INDEX events_task_xid ON events (task_id, xid, id);

DROP TRIGGER memory_events_order ON memory_events;
DROP FUNCTION memory_events_order();
ALTER TABLE memory_events ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE memory_events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX memory_events_xid ON memory_events (xid, id);

-- A word of an events line as workspace.FormatEvent writes it: bare when
-- it is printable ASCII without a space, '"', '=' or '\', else quoted
-- (JSON's escapes are ones Go's strconv.Unquote reads).
CREATE FUNCTION event_word(w text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN w ~ '^[]!#-<>-[^-~]+$' THEN w ELSE to_json(w)::text END
$$;

-- Every write of an entry of the thread scope (env data) or the session
-- scope makes its event, whoever writes it: workspaced itself and an
-- agent's own INSERT, UPDATE or DELETE alike, exactly once, in the
-- write's transaction. An insert is env_stored (memory_stored in the
-- session scope), an update env_updated, a delete env_deleted; the agent
-- is the row's stored_by, and for a delete the one the transaction names
-- in workspaced.entry_agent, else the database role. A writer says more
-- in settings of its transaction (set_config(name, value, true)):
-- workspaced.entry_verb 'stored' makes its next update a store (an
-- upsert that replaced the row), workspaced.entry_token names the token
-- the write came with (token=, as workspace.FormatEvent puts it), both
-- cleared by the event that uses them; workspaced.entry_events 'off'
-- silences its writes (an import, which brings the events along).
CREATE FUNCTION entries_event() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  r      record;
  verb   text;
  agent  text;
  t      timestamptz;
  task   text;
  ev     text;
  attrs  text;
  token  text := coalesce(current_setting('workspaced.entry_token', true), '');
BEGIN
  IF current_setting('workspaced.entry_events', true) = 'off' THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    r := OLD;
    verb := 'deleted';
    agent := coalesce(nullif(current_setting('workspaced.entry_agent', true), ''), current_user);
    t := date_trunc('milliseconds', clock_timestamp());
  ELSE
    r := NEW;
    verb := CASE WHEN TG_OP = 'INSERT' THEN 'stored'
      ELSE coalesce(nullif(current_setting('workspaced.entry_verb', true), ''), 'updated') END;
    agent := NEW.stored_by;
    -- An update that leaves updated_at as it was happened now.
    t := CASE WHEN TG_OP = 'UPDATE' AND NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at
      THEN date_trunc('milliseconds', clock_timestamp()) ELSE NEW.updated_at END;
  END IF;
  PERFORM set_config('workspaced.entry_verb', '', true), set_config('workspaced.entry_agent', '', true),
    set_config('workspaced.entry_token', '', true);
  attrs := ' agent=' || event_word(agent) || ' key=' || event_word(r.key);
  IF r.scope = 'session' THEN
    task := split_part(r.owner, '/', 1);
    ev := 'memory_' || verb;
    attrs := attrs || ' scope=session thread=' || event_word(substr(r.owner, length(task) + 2));
  ELSE
    task := r.owner;
    ev := 'env_' || verb;
  END IF;
  IF token <> '' THEN
    attrs := attrs || ' token=' || event_word(token);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    attrs := attrs || ' version=' || r.version;
  END IF;
  INSERT INTO events (task_id, time, line) VALUES (task, t,
    to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ' ' || ev || ' ' || event_word(task) || attrs);
  RETURN NULL;
END $$;
CREATE TRIGGER entries_event AFTER INSERT OR UPDATE ON entries
  FOR EACH ROW WHEN (NEW.scope IN ('thread', 'session')) EXECUTE FUNCTION entries_event();
CREATE TRIGGER entries_event_delete AFTER DELETE ON entries
  FOR EACH ROW WHEN (OLD.scope IN ('thread', 'session')) EXECUTE FUNCTION entries_event();

-- NOTIFY serializes the commits of the transactions that send one (a
-- database-wide lock from before the commit to its end, its flush
-- included), so writers that notify commit one at a time. A writer that
-- sets workspaced.events_notify to 'off' in its transaction sends none
-- and notifies after its commit itself, in a transaction of its own that
-- writes nothing (workspaced's env puts); an agent's insert still
-- notifies as before.
CREATE OR REPLACE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('workspaced.events_notify', true) = 'off' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify('workspaced_events_' || TG_TABLE_SCHEMA, t.task_id)
    FROM (SELECT DISTINCT task_id FROM new_events) AS t;
  RETURN NULL;
END $$;
