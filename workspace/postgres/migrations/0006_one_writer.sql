-- A new task wakes the daemon (on the markers channel, with the task's
-- id), which writes its first state at once, as on files.
CREATE FUNCTION tasks_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('workspaced_markers_' || TG_TABLE_SCHEMA, NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_notify AFTER INSERT ON tasks
  FOR EACH ROW EXECUTE FUNCTION tasks_notify();

-- A marker name is journaled once: a name the journal already holds is
-- refused when the marker is inserted (the daemon also passes over one
-- that slipped in while the first was being taken), and two markers of
-- one name cannot wait at once. The trigger runs after markers_name has
-- named a marker inserted without one.
CREATE FUNCTION markers_once() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  taken boolean;
BEGIN
  -- The journal of the marker's own schema, whatever the inserting
  -- session's search_path.
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.journal WHERE task_id = $1 AND name = $2)', TG_TABLE_SCHEMA)
    INTO taken USING NEW.task_id, NEW.name;
  IF taken THEN
    RAISE EXCEPTION 'marker % of task % was taken already', NEW.name, NEW.task_id
      USING ERRCODE = 'unique_violation',
            HINT = 'never reuse a marker name: give each marker a new random suffix';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER markers_once BEFORE INSERT ON markers
  FOR EACH ROW EXECUTE FUNCTION markers_once();

DO $$
BEGIN
  CREATE UNIQUE INDEX markers_task_name ON markers (task_id, name);
EXCEPTION WHEN unique_violation THEN
  CREATE INDEX markers_task_name ON markers (task_id, name);
  RAISE NOTICE 'two waiting markers share a name: names are refused when reused from now on';
END $$;

DO $$
BEGIN
  CREATE UNIQUE INDEX journal_task_name ON journal (task_id, name);
EXCEPTION WHEN unique_violation THEN
  CREATE INDEX journal_task_name ON journal (task_id, name);
  RAISE NOTICE 'the journal holds a marker name twice from before: names are refused when reused from now on';
END $$;
