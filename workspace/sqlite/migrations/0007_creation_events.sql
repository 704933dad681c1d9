-- A task's and a thread's creation make their events, whoever inserts
-- the row: workspaced itself and an agent's own INSERT (sqlite3,
-- Python's sqlite3) alike, exactly once, in the insert's transaction, as
-- an entry's writes do (0005). A task is task_created by=<submitted_by>;
-- a thread other than a task's root one is thread_created <thread>
-- from=… parent=… to=…; the time is the document's created_at. An import
-- (entry_intent.quiet = 1), which brings the events along, makes none.
CREATE TRIGGER tasks_event_insert AFTER INSERT ON tasks
  FOR EACH ROW WHEN (SELECT quiet FROM entry_intent) = 0
BEGIN
  UPDATE entry_intent SET making = 1;
  INSERT INTO events (task_id, time, line)
    SELECT NEW.id, t, t || ' task_created ' || CASE WHEN NEW.id <> '' AND NEW.id NOT GLOB '*[^]-~!#-<>-[]*' THEN NEW.id ELSE json_quote(NEW.id) END
      || ' by=' || CASE WHEN agent <> '' AND agent NOT GLOB '*[^]-~!#-<>-[]*' THEN agent ELSE json_quote(agent) END
    FROM (SELECT
      coalesce(json_extract(NEW.doc, '$.submitted_by'), '') AS agent,
      coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(NEW.doc, '$.created_at')), strftime('%Y-%m-%dT%H:%M:%fZ', NEW.created_at),
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS t);
  UPDATE entry_intent SET making = 0;
END;

CREATE TRIGGER threads_event_insert AFTER INSERT ON threads
  FOR EACH ROW WHEN NEW.id <> NEW.task_id AND (SELECT quiet FROM entry_intent) = 0
BEGIN
  UPDATE entry_intent SET making = 1;
  INSERT INTO events (task_id, time, line)
    SELECT NEW.task_id, t, t || ' thread_created ' || CASE WHEN NEW.task_id <> '' AND NEW.task_id NOT GLOB '*[^]-~!#-<>-[]*' THEN NEW.task_id ELSE json_quote(NEW.task_id) END
      || ' ' || CASE WHEN NEW.id <> '' AND NEW.id NOT GLOB '*[^]-~!#-<>-[]*' THEN NEW.id ELSE json_quote(NEW.id) END
      || ' from=' || CASE WHEN frm <> '' AND frm NOT GLOB '*[^]-~!#-<>-[]*' THEN frm ELSE json_quote(frm) END
      || ' parent=' || CASE WHEN parent <> '' AND parent NOT GLOB '*[^]-~!#-<>-[]*' THEN parent ELSE json_quote(parent) END
      || ' to=' || CASE WHEN dest <> '' AND dest NOT GLOB '*[^]-~!#-<>-[]*' THEN dest ELSE json_quote(dest) END
    FROM (SELECT
      coalesce(json_extract(NEW.doc, '$.from'), '') AS frm,
      coalesce(json_extract(NEW.doc, '$.parent_id'), NEW.task_id) AS parent,
      coalesce(json_extract(NEW.doc, '$.to'), '') AS dest,
      coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', json_extract(NEW.doc, '$.created_at')), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS t);
  UPDATE entry_intent SET making = 0;
END;
