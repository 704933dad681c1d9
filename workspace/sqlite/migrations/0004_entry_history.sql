-- The earlier versions of memory entries (the global memory's and each
-- agent's scope): a row a write replaces or a delete removes is kept here
-- first, by a trigger, so a write made with SQL keeps its too.
CREATE TABLE entry_history (
  id                INTEGER PRIMARY KEY,
  scope             TEXT NOT NULL,
  owner             TEXT NOT NULL DEFAULT '',
  key               TEXT NOT NULL,
  short_description TEXT NOT NULL,
  stored_by         TEXT NOT NULL,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  version           INTEGER NOT NULL,
  value             TEXT NOT NULL
);
CREATE INDEX entry_history_key ON entry_history (scope, owner, key, id);

CREATE TRIGGER entry_history_update AFTER UPDATE ON entries
  FOR EACH ROW WHEN OLD.scope IN ('global', 'agent')
BEGIN
  INSERT INTO entry_history (scope, owner, key, short_description, stored_by, created_at, updated_at, version, value)
  VALUES (OLD.scope, OLD.owner, OLD.key, OLD.short_description, OLD.stored_by, OLD.created_at, OLD.updated_at, OLD.version, OLD.value);
END;

CREATE TRIGGER entry_history_delete AFTER DELETE ON entries
  FOR EACH ROW WHEN OLD.scope IN ('global', 'agent')
BEGIN
  INSERT INTO entry_history (scope, owner, key, short_description, stored_by, created_at, updated_at, version, value)
  VALUES (OLD.scope, OLD.owner, OLD.key, OLD.short_description, OLD.stored_by, OLD.created_at, OLD.updated_at, OLD.version, OLD.value);
END;
