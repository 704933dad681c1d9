-- The workspace as tables. Every document is kept as the exact bytes the
-- file tree would hold (text, not jsonb, which would reorder keys), so an
-- export writes the tree byte for byte.

-- workspace.json, config/agents.json and other root files, by path.
CREATE TABLE files (
  path       text PRIMARY KEY,
  body       text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- task.json of every task.
CREATE TABLE tasks (
  id         text PRIMARY KEY,
  created_at timestamptz NOT NULL,
  doc        text NOT NULL
);

-- The products agents write in a task directory, by their path in it:
-- plan.json, plans/plan_v<N>.json, outputs/<id>.json, reviews/<id>.json.
CREATE TABLE products (
  task_id    text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  path       text NOT NULL,
  body       text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, path)
);

-- Markers waiting for the daemon. Agents insert them; the daemon deletes
-- each in the transaction that journals it, so a row here is a marker not
-- yet applied, and a journal row one applied exactly once.
CREATE TABLE markers (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id    text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  kind       text NOT NULL CHECK (kind IN ('claim', 'done')),
  name       text NOT NULL DEFAULT '',
  body       text NOT NULL,
  dropped_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX markers_task ON markers (task_id, id);

-- A marker without a name is named as a file would be: .claim.<id>.
CREATE FUNCTION markers_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.name = '' THEN
    NEW.name := '.' || NEW.kind || '.' || NEW.id;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER markers_name BEFORE INSERT ON markers
  FOR EACH ROW EXECUTE FUNCTION markers_name();

-- Every marker inserted wakes the daemon listening on
-- workspaced_markers_<schema>, with the task's id.
CREATE FUNCTION markers_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('workspaced_markers_' || TG_TABLE_SCHEMA, NEW.task_id);
  RETURN NULL;
END $$;
CREATE TRIGGER markers_notify AFTER INSERT ON markers
  FOR EACH ROW EXECUTE FUNCTION markers_notify();

-- state.json of every task: written only by the daemon.
CREATE TABLE states (
  task_id     text PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
  journal_seq bigint NOT NULL,
  doc         text NOT NULL,
  epoch       bigint NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The journal: one row per marker taken, with the leader epoch of the
-- daemon that took it.
CREATE TABLE journal (
  task_id  text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  seq      bigint NOT NULL CHECK (seq > 0),
  taken_at timestamptz NOT NULL,
  name     text NOT NULL,
  record   text NOT NULL,
  epoch    bigint NOT NULL,
  PRIMARY KEY (task_id, seq)
);

-- The previous states of a task, newest last (backups/ of the tree).
CREATE TABLE backups (
  task_id     text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  n           bigint GENERATED ALWAYS AS IDENTITY,
  journal_seq bigint NOT NULL,
  doc         text NOT NULL,
  saved_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, n)
);

-- events.log of every task, one line per row.
CREATE TABLE events (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id text NOT NULL,
  time    timestamptz NOT NULL,
  line    text NOT NULL
);
CREATE INDEX events_task ON events (task_id, id);

-- Entries of the four scopes: thread (env data; owner: the task), session
-- (owner: <task>/<thread>), agent memory (owner: the agent) and global
-- memory (owner '').
CREATE TABLE entries (
  scope             text NOT NULL,
  owner             text NOT NULL DEFAULT '',
  key               text NOT NULL,
  short_description text NOT NULL,
  stored_by         text NOT NULL,
  created_at        timestamptz NOT NULL,
  updated_at        timestamptz NOT NULL,
  version           integer NOT NULL,
  size              bigint NOT NULL,
  value             text NOT NULL,
  PRIMARY KEY (scope, owner, key)
);

-- threads/<id>.json of every task.
CREATE TABLE threads (
  task_id text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
  id      text NOT NULL,
  doc     text NOT NULL,
  PRIMARY KEY (task_id, id)
);

-- The friction log, one line per row.
CREATE TABLE friction (
  id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at   timestamptz NOT NULL DEFAULT now(),
  line text NOT NULL
);

-- The daemon's lease: one row. A daemon leads while it holds the row's
-- epoch and renews expires_at; taking over bumps the epoch, and every
-- state write checks it in its own transaction (fencing). backend_pid is
-- the leader's session: once it is gone (the process died), the lease is
-- free before it expires.
CREATE TABLE lease (
  id          integer PRIMARY KEY CHECK (id = 1),
  epoch       bigint NOT NULL DEFAULT 0,
  holder      text NOT NULL DEFAULT '',
  backend_pid integer NOT NULL DEFAULT 0,
  expires_at  timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO lease (id) VALUES (1);

-- Who holds which named lock (the lock itself is an advisory lock of the
-- holder's session).
CREATE TABLE locks (
  name   text PRIMARY KEY,
  holder text NOT NULL,
  since  timestamptz NOT NULL DEFAULT now()
);
