-- A version on each states row, so that the daemon knows the row still
-- holds the document it wrote last by reading a number, not the document:
-- its commit writes the version it read plus one and remembers it. Any
-- other update of the row (a restore, an UPDATE by hand past the guard)
-- that leaves the version as it was gets it raised by the trigger, so the
-- daemon reads the document again and checks the next state whole. A row
-- inserted otherwise (an import) has version 0, which the daemon never
-- takes for its own.
ALTER TABLE states ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER states_version AFTER UPDATE ON states
  FOR EACH ROW WHEN new.version = old.version
BEGIN
  UPDATE states SET version = old.version + 1 WHERE task_id = new.task_id;
END;
