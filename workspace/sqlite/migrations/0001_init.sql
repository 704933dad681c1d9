-- The workspace as tables, as on PostgreSQL. Every document is kept as
-- the exact bytes the file tree would hold (TEXT), so an export writes the
-- tree byte for byte. Times are TEXT in UTC to the millisecond,
-- 2006-01-02T15:04:05.000Z, which sorts as it reads.

-- workspace.json, config/agents.json, skills/<name>.md, the friction log.
CREATE TABLE files (
  path       TEXT PRIMARY KEY,
  body       TEXT NOT NULL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- task.json of every task.
CREATE TABLE tasks (
  id         TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  doc        TEXT NOT NULL
);

-- The products agents write in a task directory, by their path in it.
CREATE TABLE products (
  task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  path       TEXT NOT NULL,
  body       TEXT NOT NULL,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (task_id, path)
);

-- Markers waiting for the daemon. Agents insert them; the daemon deletes
-- each in the transaction that journals it. AUTOINCREMENT: an id is never
-- reused, so insertion order is id order for good.
CREATE TABLE markers (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id    TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  kind       TEXT NOT NULL CHECK (kind IN ('claim', 'done')),
  name       TEXT NOT NULL DEFAULT '',
  body       TEXT NOT NULL,
  dropped_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX markers_task ON markers (task_id, id);
CREATE UNIQUE INDEX markers_task_name ON markers (task_id, name);

-- state.json of every task: written only by the daemon.
CREATE TABLE states (
  task_id     TEXT PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
  journal_seq INTEGER NOT NULL,
  doc         TEXT NOT NULL,
  epoch       INTEGER NOT NULL,
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- The journal: one row per marker taken. file: the journal file a record
-- was imported from ('' for one the daemon wrote here).
CREATE TABLE journal (
  task_id  TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  seq      INTEGER NOT NULL CHECK (seq > 0),
  taken_at TEXT NOT NULL,
  name     TEXT NOT NULL,
  record   TEXT NOT NULL,
  epoch    INTEGER NOT NULL,
  file     TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (task_id, seq)
);
CREATE UNIQUE INDEX journal_task_name ON journal (task_id, name);

-- A marker without a name is named as a file would be: .<kind>.<id>.
CREATE TRIGGER markers_name AFTER INSERT ON markers
  FOR EACH ROW WHEN NEW.name = ''
BEGIN
  UPDATE markers SET name = '.' || NEW.kind || '.' || NEW.id WHERE id = NEW.id;
END;

-- A marker name is journaled once: a name the journal already holds is
-- refused when the marker is inserted.
CREATE TRIGGER markers_once BEFORE INSERT ON markers
  FOR EACH ROW WHEN EXISTS (SELECT 1 FROM journal WHERE task_id = NEW.task_id AND name = NEW.name)
BEGIN
  SELECT RAISE(ABORT, 'marker name taken already: never reuse a marker name, give each marker a new random suffix');
END;

-- The previous states of a task, newest last. name: the backup file's
-- name when imported from a tree ('' for one kept here).
CREATE TABLE backups (
  task_id     TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  n           INTEGER PRIMARY KEY AUTOINCREMENT,
  journal_seq INTEGER NOT NULL,
  doc         TEXT NOT NULL,
  saved_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  name        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX backups_task ON backups (task_id, n);

-- events.log of every task, one line per row. Ids are drawn by the one
-- writer SQLite allows at a time, so they are in commit order.
CREATE TABLE events (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id TEXT NOT NULL,
  time    TEXT NOT NULL,
  line    TEXT NOT NULL
);
CREATE INDEX events_task ON events (task_id, id);

-- Entries of the four scopes: thread (owner: the task), session (owner:
-- <task>/<thread>), agent memory (owner: the agent), global (owner '').
CREATE TABLE entries (
  scope             TEXT NOT NULL,
  owner             TEXT NOT NULL DEFAULT '',
  key               TEXT NOT NULL,
  short_description TEXT NOT NULL,
  stored_by         TEXT NOT NULL,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL,
  version           INTEGER NOT NULL,
  size              INTEGER NOT NULL,
  value             TEXT NOT NULL,
  PRIMARY KEY (scope, owner, key)
);

-- threads/<id>.json of every task.
CREATE TABLE threads (
  task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  id      TEXT NOT NULL,
  doc     TEXT NOT NULL,
  PRIMARY KEY (task_id, id)
);

-- Who took which named lock last (holder: the JSON of a locking.Holder).
-- The lock itself is a flock of a file beside the database.
CREATE TABLE locks (
  name    TEXT PRIMARY KEY,
  holder  TEXT NOT NULL,
  since   TEXT NOT NULL,
  task_id TEXT NOT NULL DEFAULT '',
  lock    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX locks_task ON locks (task_id);

-- The agents' bearer tokens, as config/tokens.json keeps them: the SHA-256
-- of each token, never the token.
CREATE TABLE tokens (
  sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64),
  n      INTEGER NOT NULL,
  doc    TEXT NOT NULL
);
