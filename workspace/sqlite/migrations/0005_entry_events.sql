-- Every write of an entry of the thread scope (env data) or the session
-- scope makes its event, whoever writes it: workspaced itself and an
-- agent's own INSERT, UPDATE or DELETE (sqlite3, Python's sqlite3) alike,
-- exactly once, in the write's transaction. An insert is env_stored
-- (memory_stored in the session scope), an update env_updated, a delete
-- env_deleted; the agent is the row's stored_by, and for a delete the one
-- the writer names in entry_intent, else "sql".
--
-- entry_intent is what a writer says of its next entry write, in its
-- transaction: verb 'stored' makes an update a store (an upsert that
-- replaced the row), agent names who deletes, token the token the write
-- came with (token=, as workspace.FormatEvent puts it); all are cleared
-- by the event that uses them. quiet = 1 silences the writes (an import, which
-- brings the events along, and retention) until set back to 0 in the
-- same transaction. making is 1 while a trigger inserts an entry's event:
-- the guard of events (0002) lets that insert through on an agent's
-- connection.
CREATE TABLE entry_intent (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  verb   TEXT,
  agent  TEXT,
  token  TEXT,
  quiet  INTEGER NOT NULL DEFAULT 0,
  making INTEGER NOT NULL DEFAULT 0
);
INSERT INTO entry_intent (id) VALUES (1);

DROP TRIGGER events_guard_insert;
CREATE TRIGGER events_guard_insert BEFORE INSERT ON events
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
    AND (SELECT making FROM entry_intent) = 0
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes events; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

-- The events line as workspace.FormatEvent writes it: a word is bare
-- when it is printable ASCII without a space, '"', '=' or '\', else
-- quoted (json_quote's escapes are ones Go's strconv.Unquote reads); the
-- time is updated_at's, or now for a delete and for an update that left
-- updated_at as it was.
CREATE TRIGGER entries_event_insert AFTER INSERT ON entries
  FOR EACH ROW WHEN NEW.scope IN ('thread', 'session') AND (SELECT quiet FROM entry_intent) = 0
BEGIN
  UPDATE entry_intent SET making = 1;
  INSERT INTO events (task_id, time, line)
    SELECT task, t, t || ' ' || ev || ' ' || CASE WHEN task <> '' AND task NOT GLOB '*[^]-~!#-<>-[]*' THEN task ELSE json_quote(task) END
      || ' agent=' || CASE WHEN agent <> '' AND agent NOT GLOB '*[^]-~!#-<>-[]*' THEN agent ELSE json_quote(agent) END
      || ' key=' || CASE WHEN NEW.key <> '' AND NEW.key NOT GLOB '*[^]-~!#-<>-[]*' THEN NEW.key ELSE json_quote(NEW.key) END
      || CASE WHEN NEW.scope = 'session' THEN ' scope=session thread='
        || CASE WHEN thread <> '' AND thread NOT GLOB '*[^]-~!#-<>-[]*' THEN thread ELSE json_quote(thread) END ELSE '' END
      || coalesce(' token=' || (SELECT CASE WHEN token <> '' AND token NOT GLOB '*[^]-~!#-<>-[]*' THEN token ELSE json_quote(token) END
        FROM entry_intent WHERE token IS NOT NULL), '')
      || ' version=' || NEW.version
    FROM (SELECT
      CASE WHEN NEW.scope = 'session' THEN substr(NEW.owner, 1, instr(NEW.owner || '/', '/') - 1) ELSE NEW.owner END AS task,
      substr(NEW.owner, instr(NEW.owner || '/', '/') + 1) AS thread,
      CASE WHEN NEW.scope = 'session' THEN 'memory_stored' ELSE 'env_stored' END AS ev,
      NEW.stored_by AS agent,
      coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', NEW.updated_at), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS t);
  UPDATE entry_intent SET verb = NULL, agent = NULL, token = NULL, making = 0;
END;

CREATE TRIGGER entries_event_update AFTER UPDATE ON entries
  FOR EACH ROW WHEN NEW.scope IN ('thread', 'session') AND (SELECT quiet FROM entry_intent) = 0
BEGIN
  UPDATE entry_intent SET making = 1;
  INSERT INTO events (task_id, time, line)
    SELECT task, t, t || ' ' || ev || ' ' || CASE WHEN task <> '' AND task NOT GLOB '*[^]-~!#-<>-[]*' THEN task ELSE json_quote(task) END
      || ' agent=' || CASE WHEN agent <> '' AND agent NOT GLOB '*[^]-~!#-<>-[]*' THEN agent ELSE json_quote(agent) END
      || ' key=' || CASE WHEN NEW.key <> '' AND NEW.key NOT GLOB '*[^]-~!#-<>-[]*' THEN NEW.key ELSE json_quote(NEW.key) END
      || CASE WHEN NEW.scope = 'session' THEN ' scope=session thread='
        || CASE WHEN thread <> '' AND thread NOT GLOB '*[^]-~!#-<>-[]*' THEN thread ELSE json_quote(thread) END ELSE '' END
      || coalesce(' token=' || (SELECT CASE WHEN token <> '' AND token NOT GLOB '*[^]-~!#-<>-[]*' THEN token ELSE json_quote(token) END
        FROM entry_intent WHERE token IS NOT NULL), '')
      || ' version=' || NEW.version
    FROM (SELECT
      CASE WHEN NEW.scope = 'session' THEN substr(NEW.owner, 1, instr(NEW.owner || '/', '/') - 1) ELSE NEW.owner END AS task,
      substr(NEW.owner, instr(NEW.owner || '/', '/') + 1) AS thread,
      CASE WHEN NEW.scope = 'session' THEN 'memory_' ELSE 'env_' END || coalesce((SELECT verb FROM entry_intent), 'updated') AS ev,
      NEW.stored_by AS agent,
      coalesce(CASE WHEN NEW.updated_at IS NOT OLD.updated_at THEN strftime('%Y-%m-%dT%H:%M:%fZ', NEW.updated_at) END,
        strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) AS t);
  UPDATE entry_intent SET verb = NULL, agent = NULL, token = NULL, making = 0;
END;

CREATE TRIGGER entries_event_delete AFTER DELETE ON entries
  FOR EACH ROW WHEN OLD.scope IN ('thread', 'session') AND (SELECT quiet FROM entry_intent) = 0
BEGIN
  UPDATE entry_intent SET making = 1;
  INSERT INTO events (task_id, time, line)
    SELECT task, t, t || ' ' || ev || ' ' || CASE WHEN task <> '' AND task NOT GLOB '*[^]-~!#-<>-[]*' THEN task ELSE json_quote(task) END
      || ' agent=' || CASE WHEN agent <> '' AND agent NOT GLOB '*[^]-~!#-<>-[]*' THEN agent ELSE json_quote(agent) END
      || ' key=' || CASE WHEN OLD.key <> '' AND OLD.key NOT GLOB '*[^]-~!#-<>-[]*' THEN OLD.key ELSE json_quote(OLD.key) END
      || CASE WHEN OLD.scope = 'session' THEN ' scope=session thread='
        || CASE WHEN thread <> '' AND thread NOT GLOB '*[^]-~!#-<>-[]*' THEN thread ELSE json_quote(thread) END ELSE '' END
      || coalesce(' token=' || (SELECT CASE WHEN token <> '' AND token NOT GLOB '*[^]-~!#-<>-[]*' THEN token ELSE json_quote(token) END
        FROM entry_intent WHERE token IS NOT NULL), '')
    FROM (SELECT
      CASE WHEN OLD.scope = 'session' THEN substr(OLD.owner, 1, instr(OLD.owner || '/', '/') - 1) ELSE OLD.owner END AS task,
      substr(OLD.owner, instr(OLD.owner || '/', '/') + 1) AS thread,
      CASE WHEN OLD.scope = 'session' THEN 'memory_deleted' ELSE 'env_deleted' END AS ev,
      coalesce((SELECT agent FROM entry_intent), 'sql') AS agent,
      strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS t);
  UPDATE entry_intent SET verb = NULL, agent = NULL, token = NULL, making = 0;
END;
