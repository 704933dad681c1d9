-- Namespaced memory: an item per namespace and key. ns_key is the
-- namespace with each label followed by chr(1), a byte no label holds:
-- its byte order ("C") is the namespaces' label-by-label order, and a
-- prefix of labels is a prefix of it (["a","b"] is not one of
-- ["a","bc"]), so a search under a prefix is a range of the primary key.
-- namespace is the same as a JSON array, for readers. An item whose
-- expires_at has passed is invisible to every read of workspaced and is
-- removed by the retention run.
CREATE TABLE memory_items (
  ns_key     text COLLATE "C" NOT NULL,
  key        text COLLATE "C" NOT NULL,
  namespace  text NOT NULL,
  version    integer NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  expires_at timestamptz,
  stored_by  text NOT NULL,
  value      text NOT NULL,
  PRIMARY KEY (ns_key, key)
);
CREATE INDEX memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;

-- The memory events (memory_stored, memory_deleted), one events line
-- each: the workspace's feed beside the tasks'. Ids in commit order, as
-- the tasks' events have them (0004): every statement that inserts takes
-- the schema's memory events lock until its transaction ends, so a reader
-- that has read an id finds no lower one later.
CREATE TABLE memory_events (
  id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  time timestamptz NOT NULL,
  line text NOT NULL
);
CREATE FUNCTION memory_events_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('workspaced memory events'), hashtext(TG_TABLE_SCHEMA));
  RETURN NULL;
END $$;
CREATE TRIGGER memory_events_order BEFORE INSERT ON memory_events
  FOR EACH STATEMENT EXECUTE FUNCTION memory_events_order();
