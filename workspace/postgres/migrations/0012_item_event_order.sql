-- The writes of one item in the order they committed. An event's place
-- is its (xid, id) (0009), and a transaction's id is given when it first
-- writes, which may be before it waits for the row another writer holds:
-- two puts of one item could be read in the order they began, version 3
-- before version 2. Now the row of an entry (and of a memory item)
-- carries the xid its last event was placed by, and a write of the row
-- places its event at the greater of its own transaction's id and that
-- one: after every earlier write of the row, whose transaction it waited
-- for. A reader still reads a row only once every transaction of an id
-- below its xid has ended, its own among them (its own id is at most
-- the greater one), so nothing that commits late is skipped, and every
-- reader reads one order. Rows from before have no event_xid: their
-- next write places its event by its own id, as before.
ALTER TABLE entries ADD COLUMN event_xid xid8;
ALTER TABLE memory_items ADD COLUMN event_xid xid8;

-- The row's new event_xid, set before each insert and update whoever
-- writes (workspaced and an agent's own SQL alike). On an update OLD is
-- the newest version of the row, read once its writer's lock is had.
CREATE FUNCTION event_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    NEW.event_xid := greatest(pg_current_xact_id(), OLD.event_xid);
  ELSE
    NEW.event_xid := pg_current_xact_id();
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER entries_event_xid BEFORE INSERT OR UPDATE ON entries
  FOR EACH ROW EXECUTE FUNCTION event_xid();
CREATE TRIGGER memory_items_event_xid BEFORE INSERT OR UPDATE ON memory_items
  FOR EACH ROW EXECUTE FUNCTION event_xid();

-- An entry's event is placed by its row's event_xid (a delete's by the
-- greater of its own id and the deleted row's).
CREATE OR REPLACE FUNCTION entries_event() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
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
  INSERT INTO events (task_id, time, line, xid) VALUES (task, t,
    to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || ' ' || ev || ' ' || event_word(task) || attrs,
    CASE WHEN TG_OP = 'DELETE' THEN greatest(pg_current_xact_id(), r.event_xid) ELSE r.event_xid END);
  RETURN NULL;
END $$;
