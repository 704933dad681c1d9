-- The earlier versions of memory entries (the global memory's and each
-- agent's scope): a row a write replaces or a delete removes is kept here
-- first, by a trigger, so a write made with SQL keeps its too. Agents may
-- read it; only the trigger writes it, as the role that made the schema
-- (SECURITY DEFINER, its search_path the schema's).
CREATE TABLE entry_history (
  id                bigserial PRIMARY KEY,
  scope             text NOT NULL,
  owner             text NOT NULL DEFAULT '',
  key               text NOT NULL,
  short_description text NOT NULL,
  stored_by         text NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  version           integer NOT NULL,
  value             text NOT NULL
);
CREATE INDEX entry_history_key ON entry_history (scope, owner, key, id);

CREATE FUNCTION entry_history_keep() RETURNS trigger LANGUAGE plpgsql
  SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO entry_history (scope, owner, key, short_description, stored_by, created_at, updated_at, version, value)
  VALUES (OLD.scope, OLD.owner, OLD.key, OLD.short_description, OLD.stored_by, OLD.created_at, OLD.updated_at, OLD.version, OLD.value);
  RETURN NULL;
END $$;

CREATE TRIGGER entry_history_keep AFTER UPDATE OR DELETE ON entries
  FOR EACH ROW WHEN (OLD.scope IN ('global', 'agent')) EXECUTE FUNCTION entry_history_keep();
