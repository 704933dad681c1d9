-- A task's states, the current one and its backups, in one table, so
-- that a commit writes its document once: it inserts the new state as a
-- row, and the row that was current becomes a backup where it lies.
-- Before, a commit copied the current row into backups and rewrote the
-- states row: at 10,000 subtasks (a 504 KiB document) three copies of
-- the document a commit, one kept.
--
-- states and backups stay what agents read, as views with the columns
-- and the meaning the tables had (docs/PROTOCOL.md, section 11):
--  - states: the newest row of each task written as a state
--    (backup = 0);
--  - backups: every other row, by n; saved_at is when the row was
--    replaced, the updated_at of the next state (a row inserted as a
--    backup, by an import, keeps its own).
-- Writes to the views (an import, a restore by hand past the guard) go to
-- state_history through the INSTEAD OF triggers below, with the guard's
-- messages; the daemon writes state_history itself.
--
-- doc is the last column: the others are read without the document's
-- overflow pages.
CREATE TABLE state_history (
  n           INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  backup      INTEGER NOT NULL DEFAULT 0 CHECK (backup IN (0, 1)),
  journal_seq INTEGER NOT NULL,
  epoch       INTEGER NOT NULL DEFAULT 0,
  version     INTEGER NOT NULL DEFAULT 0,
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  saved_at    TEXT,
  name        TEXT NOT NULL DEFAULT '',
  doc         TEXT NOT NULL
);
CREATE INDEX state_history_task ON state_history (task_id, n);
CREATE INDEX state_history_state ON state_history (task_id, n) WHERE backup = 0;

-- The rows move with their numbers: the backups first, as backups, then
-- each task's state, numbered after every backup.
INSERT INTO state_history (n, task_id, backup, journal_seq, epoch, version, updated_at, saved_at, name, doc)
  SELECT n, task_id, 1, journal_seq, 0, 0, saved_at, saved_at, name, doc FROM backups ORDER BY n;
INSERT INTO state_history (task_id, backup, journal_seq, epoch, version, updated_at, saved_at, name, doc)
  SELECT task_id, 0, journal_seq, epoch, version, updated_at, NULL, '', doc FROM states ORDER BY task_id;

DROP TABLE states;
DROP TABLE backups;

CREATE VIEW states AS
  SELECT task_id, journal_seq, doc, epoch, updated_at, version FROM state_history h
  WHERE backup = 0 AND n = (SELECT max(n) FROM state_history WHERE task_id = h.task_id AND backup = 0);

CREATE VIEW backups AS
  SELECT task_id, n, journal_seq, doc,
    coalesce(saved_at, (SELECT updated_at FROM state_history WHERE task_id = h.task_id AND backup = 0 AND n > h.n ORDER BY n LIMIT 1), updated_at) AS saved_at,
    name
  FROM state_history h
  WHERE backup = 1 OR n < (SELECT max(n) FROM state_history WHERE task_id = h.task_id AND backup = 0);

-- The guard (0002) on the table and on the views, with its messages.
CREATE TRIGGER state_history_guard_insert BEFORE INSERT ON state_history
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER state_history_guard_update BEFORE UPDATE ON state_history
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER state_history_guard_delete BEFORE DELETE ON state_history
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

-- A state inserted: a task has one (the table's primary key was task_id).
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

-- A state updated in place, its version raised when the update leaves it
-- as it was (0006): the daemon then reads the document again.
CREATE TRIGGER states_update INSTEAD OF UPDATE ON states
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  UPDATE state_history SET task_id = NEW.task_id, journal_seq = NEW.journal_seq, doc = NEW.doc, epoch = NEW.epoch,
      updated_at = NEW.updated_at, version = CASE WHEN NEW.version = OLD.version THEN OLD.version + 1 ELSE NEW.version END
    WHERE n = (SELECT max(n) FROM state_history WHERE task_id = OLD.task_id AND backup = 0);
END;

-- A state deleted leaves the task's backups as they were: the earlier
-- states become backups for good, with the time they were replaced.
CREATE TRIGGER states_delete INSTEAD OF DELETE ON states
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  UPDATE state_history SET saved_at = (SELECT saved_at FROM backups b WHERE b.n = state_history.n)
    WHERE task_id = OLD.task_id AND backup = 0 AND saved_at IS NULL;
  UPDATE state_history SET backup = 1 WHERE task_id = OLD.task_id AND backup = 0 AND saved_at IS NOT NULL;
  DELETE FROM state_history WHERE task_id = OLD.task_id AND backup = 0;
END;

-- A backup inserted (an import) is a row of its own, kept as inserted.
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
  UPDATE state_history SET n = NEW.n, task_id = NEW.task_id, journal_seq = NEW.journal_seq, doc = NEW.doc,
      saved_at = NEW.saved_at, name = NEW.name
    WHERE n = OLD.n;
END;

CREATE TRIGGER backups_delete INSTEAD OF DELETE ON backups
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)')
    WHERE NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer');
  DELETE FROM state_history WHERE n = OLD.n;
END;
