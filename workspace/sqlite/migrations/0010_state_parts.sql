-- A state written by a commit is stored as parts, so that a commit writes
-- what its markers changed, not the whole document: at 10,000 subtasks
-- the document is 504 KiB, and a commit wrote it whole as a new row, then
-- freed the oldest backup's pages.
--
-- state_parts holds the parts: each the bytes of one piece of a document
-- as the encoder makes it (the shell between the entries, or a block of
-- 64 entries). A row of state_history written so has doc '' and parts,
-- the ids of its parts as a JSON array in the document's order; its
-- document is their bodies joined in that order. A commit that follows
-- the daemon's own row inserts only the parts whose bytes changed and
-- lists the others by id, so the rows share their unchanged parts: a
-- backup costs what changed.
--
-- replaced_at is the n of the first row that no longer holds the part
-- (NULL: the newest row still holds it). The rows holding a part are
-- consecutive, so once every row before the oldest kept one is deleted,
-- the parts replaced at or before that row are held by none, and go:
-- retention finds them by (task_id, replaced_at).
--
-- Rows written whole (a task of fewer than 512 entries, whose document
-- of a few blocks costs less as one row; imports, restores, a task's
-- first state, the rows from before this migration) keep their doc and
-- no parts; a row whose doc is set by hand has its doc read, not its
-- parts. The states and backups views give doc as the document either
-- way: readers see no change (docs/PROTOCOL.md, section 11). The join
-- keeps to what SQLite 3.40 reads (Debian's python3): an ordered
-- subquery, not group_concat(... ORDER BY ...).
CREATE TABLE state_parts (
  id          INTEGER PRIMARY KEY,
  task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  replaced_at INTEGER,
  body        TEXT NOT NULL
);
CREATE INDEX state_parts_replaced ON state_parts (task_id, replaced_at);

ALTER TABLE state_history ADD COLUMN parts TEXT;

-- The guard (0002) on the parts, with the states' message.
CREATE TRIGGER state_parts_guard_insert BEFORE INSERT ON state_parts
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER state_parts_guard_update BEFORE UPDATE ON state_parts
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER state_parts_guard_delete BEFORE DELETE ON state_parts
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

-- The views again, doc assembled; their triggers go with them and are
-- made again below, as 0008 made them, but that a row written through
-- them is a whole one (parts NULL) and that a row deleted through them
-- takes the parts no row holds any more with it.
DROP VIEW states;
DROP VIEW backups;

CREATE VIEW states AS
  SELECT task_id, journal_seq,
    CASE WHEN h.parts IS NULL OR h.doc != '' THEN h.doc ELSE (SELECT group_concat(body, '') FROM
      (SELECT p.body AS body FROM json_each(h.parts) j JOIN state_parts p ON p.id = j.value ORDER BY j.key)) END AS doc,
    epoch, updated_at, version
  FROM state_history h
  WHERE backup = 0 AND n = (SELECT max(n) FROM state_history WHERE task_id = h.task_id AND backup = 0);

CREATE VIEW backups AS
  SELECT task_id, n, journal_seq,
    CASE WHEN h.parts IS NULL OR h.doc != '' THEN h.doc ELSE (SELECT group_concat(body, '') FROM
      (SELECT p.body AS body FROM json_each(h.parts) j JOIN state_parts p ON p.id = j.value ORDER BY j.key)) END AS doc,
    coalesce(saved_at, (SELECT updated_at FROM state_history WHERE task_id = h.task_id AND backup = 0 AND n > h.n ORDER BY n LIMIT 1), updated_at) AS saved_at,
    name
  FROM state_history h
  WHERE backup = 1 OR n < (SELECT max(n) FROM state_history WHERE task_id = h.task_id AND backup = 0);

CREATE TRIGGER states_insert INSTEAD OF INSERT ON states
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  SELECT RAISE(ABORT, 'UNIQUE constraint failed: states.task_id')
    WHERE EXISTS (SELECT 1 FROM state_history WHERE task_id = NEW.task_id AND backup = 0);
  INSERT INTO state_history (task_id, backup, journal_seq, epoch, version, updated_at, doc)
    VALUES (NEW.task_id, 0, NEW.journal_seq, coalesce(NEW.epoch, 0), coalesce(NEW.version, 0),
      coalesce(NEW.updated_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), NEW.doc);
END;

CREATE TRIGGER states_update INSTEAD OF UPDATE ON states
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  UPDATE state_history SET task_id = NEW.task_id, journal_seq = NEW.journal_seq, doc = NEW.doc, parts = NULL, epoch = NEW.epoch,
      updated_at = NEW.updated_at, version = CASE WHEN NEW.version = OLD.version THEN OLD.version + 1 ELSE NEW.version END
    WHERE n = (SELECT max(n) FROM state_history WHERE task_id = OLD.task_id AND backup = 0);
END;

CREATE TRIGGER states_delete INSTEAD OF DELETE ON states
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  UPDATE state_history SET saved_at = (SELECT saved_at FROM backups b WHERE b.n = state_history.n)
    WHERE task_id = OLD.task_id AND backup = 0 AND saved_at IS NULL;
  UPDATE state_history SET backup = 1 WHERE task_id = OLD.task_id AND backup = 0 AND saved_at IS NOT NULL;
  DELETE FROM state_history WHERE task_id = OLD.task_id AND backup = 0;
  DELETE FROM state_parts WHERE task_id = OLD.task_id AND (replaced_at <= (SELECT min(n) FROM state_history WHERE task_id = OLD.task_id)
    OR NOT EXISTS (SELECT 1 FROM state_history WHERE task_id = OLD.task_id));
END;

CREATE TRIGGER backups_insert INSTEAD OF INSERT ON backups
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  INSERT INTO state_history (n, task_id, backup, journal_seq, updated_at, saved_at, name, doc)
    VALUES (NEW.n, NEW.task_id, 1, NEW.journal_seq, coalesce(NEW.saved_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
      coalesce(NEW.saved_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), coalesce(NEW.name, ''), NEW.doc);
END;

CREATE TRIGGER backups_update INSTEAD OF UPDATE ON backups
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  UPDATE state_history SET n = NEW.n, task_id = NEW.task_id, journal_seq = NEW.journal_seq, doc = NEW.doc, parts = NULL,
      saved_at = NEW.saved_at, name = NEW.name
    WHERE n = OLD.n;
END;

CREATE TRIGGER backups_delete INSTEAD OF DELETE ON backups
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  DELETE FROM state_history WHERE n = OLD.n;
  DELETE FROM state_parts WHERE task_id = OLD.task_id AND (replaced_at <= (SELECT min(n) FROM state_history WHERE task_id = OLD.task_id)
    OR NOT EXISTS (SELECT 1 FROM state_history WHERE task_id = OLD.task_id));
END;
