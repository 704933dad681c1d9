-- A version on each states row, so that the daemon knows the row still
-- holds the document it wrote last by reading a number, not the document:
-- its commit writes the version it read plus one and remembers it, with
-- the lease's epoch it wrote under. Any other update of the row (a
-- restore, an UPDATE by hand) that leaves the version as it was gets it
-- raised by the trigger, so the daemon reads the document again and
-- checks the next state whole. A row inserted otherwise (an import) has
-- version 0, which the daemon never takes for its own.
ALTER TABLE states ADD COLUMN version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION states_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  RETURN NEW;
END
$$;

CREATE TRIGGER states_version BEFORE UPDATE ON states
  FOR EACH ROW WHEN (NEW.version = OLD.version) EXECUTE FUNCTION states_version();
