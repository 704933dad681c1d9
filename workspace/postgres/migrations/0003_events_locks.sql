-- Events wake their followers: every statement that inserts events, the
-- daemon's commit among them, notifies workspaced_events_<schema> once
-- per task it wrote to, with the task's id, when its transaction commits.
CREATE FUNCTION events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('workspaced_events_' || TG_TABLE_SCHEMA, t.task_id)
    FROM (SELECT DISTINCT task_id FROM new_events) AS t;
  RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION events_notify();

-- A named lock is the session advisory lock of key; the row says who
-- took it last (holder: the JSON of a locking.Holder). The lock is held
-- while a session holds the advisory lock of the key (pg_locks).
ALTER TABLE locks
  ADD COLUMN key bigint NOT NULL DEFAULT 0,
  ADD COLUMN task_id text NOT NULL DEFAULT '',
  ADD COLUMN lock text NOT NULL DEFAULT '';
CREATE INDEX locks_task ON locks (task_id);
