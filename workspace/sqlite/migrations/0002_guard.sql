-- The guard: the rows only the daemon writes (the states, the journal,
-- the backups, the events) and the record of migrations are refused to a
-- connection that is not workspaced's. Every connection the workspaced
-- binary opens has the collation workspaced_writer; an agent's (Python's
-- sqlite3, the sqlite3 shell) has not. The triggers look it up in
-- pragma_collation_list (four rows: a lookup costs microseconds a row),
-- and a connection without it gets the message below.
--
-- It guards against mistakes, not attacks: a connection can register the
-- collation, or drop these triggers. Untrusted agents belong on
-- PostgreSQL, with its roles, or on MCP, with tokens.

CREATE TRIGGER states_guard_insert BEFORE INSERT ON states
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER states_guard_update BEFORE UPDATE ON states
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER states_guard_delete BEFORE DELETE ON states
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes states; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER journal_guard_insert BEFORE INSERT ON journal
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes journal; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER journal_guard_update BEFORE UPDATE ON journal
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes journal; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER journal_guard_delete BEFORE DELETE ON journal
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes journal; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER backups_guard_insert BEFORE INSERT ON backups
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER backups_guard_update BEFORE UPDATE ON backups
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER backups_guard_delete BEFORE DELETE ON backups
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes backups; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER events_guard_insert BEFORE INSERT ON events
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes events; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER events_guard_update BEFORE UPDATE ON events
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes events; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER events_guard_delete BEFORE DELETE ON events
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only the workspaced daemon writes events; an agent reads them and inserts markers (docs/PROTOCOL.md, section 11)');
END;

CREATE TRIGGER schema_migrations_guard_insert BEFORE INSERT ON schema_migrations
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only workspaced writes schema_migrations; run workspaced init to migrate');
END;

CREATE TRIGGER schema_migrations_guard_update BEFORE UPDATE ON schema_migrations
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only workspaced writes schema_migrations; run workspaced init to migrate');
END;

CREATE TRIGGER schema_migrations_guard_delete BEFORE DELETE ON schema_migrations
  FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM pragma_collation_list WHERE name = 'workspaced_writer')
BEGIN
  SELECT RAISE(ABORT, 'workspaced: only workspaced writes schema_migrations; run workspaced init to migrate');
END;
