-- Namespaced memory: an item per namespace and key. ns_key is the
-- namespace with each label followed by char(1), a byte no label holds:
-- its byte order is the namespaces' label-by-label order, and a prefix of
-- labels is a prefix of it (["a","b"] is not one of ["a","bc"]).
-- namespace is the same as a JSON array, for readers. An item whose
-- expires_at has passed is invisible to every read of workspaced and is
-- removed by the retention run.
CREATE TABLE memory_items (
  ns_key     TEXT NOT NULL,
  key        TEXT NOT NULL,
  namespace  TEXT NOT NULL,
  version    INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  expires_at TEXT,
  stored_by  TEXT NOT NULL,
  value      TEXT NOT NULL,
  PRIMARY KEY (ns_key, key)
);
CREATE INDEX memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;

-- The memory events (memory_stored, memory_deleted), one events line
-- each, in append order by id: the workspace's feed beside the tasks'.
CREATE TABLE memory_events (
  id   INTEGER PRIMARY KEY AUTOINCREMENT,
  time TEXT NOT NULL,
  line TEXT NOT NULL
);
