-- A task's and a thread's creation make their events, whoever inserts
-- the row: workspaced itself and an agent's own INSERT alike, exactly
-- once, in the insert's transaction, as an entry's writes do (0009). A
-- task is task_created by=<submitted_by>; a thread other than a task's
-- root one is thread_created <thread> from=… parent=… to=…; the time is
-- the document's created_at. A transaction that silences entries'
-- events (workspaced.entry_events 'off': an import, which brings the
-- events along) makes none.
CREATE FUNCTION creation_event() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  -- A NUL (\u0000) in a text field, which json's operators refuse, is a
  -- space for this read (the fields read are ids and times).
  d    json := replace(NEW.doc, '\u0000', '\u0020')::json;
  t    timestamptz;
  task text;
  rest text;
BEGIN
  IF current_setting('workspaced.entry_events', true) = 'off' THEN
    RETURN NULL;
  END IF;
  t := date_trunc('milliseconds', coalesce((d->>'created_at')::timestamptz, clock_timestamp()));
  IF TG_TABLE_NAME = 'tasks' THEN
    task := NEW.id;
    rest := ' task_created ' || event_word(task) || ' by=' || event_word(coalesce(d->>'submitted_by', ''));
  ELSE
    task := NEW.task_id;
    rest := ' thread_created ' || event_word(task) || ' ' || event_word(NEW.id)
      || ' from=' || event_word(coalesce(d->>'from', '')) || ' parent=' || event_word(coalesce(d->>'parent_id', task))
      || ' to=' || event_word(coalesce(d->>'to', ''));
  END IF;
  INSERT INTO events (task_id, time, line) VALUES (task, t, to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || rest);
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_event AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION creation_event();
CREATE TRIGGER threads_event AFTER INSERT ON threads
  FOR EACH ROW WHEN (NEW.id <> NEW.task_id) EXECUTE FUNCTION creation_event();
