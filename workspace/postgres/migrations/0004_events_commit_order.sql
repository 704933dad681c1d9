-- Event ids in commit order. An id is drawn from the sequence when a row
-- is inserted, and transactions commit in another order: without more, a
-- reader that has read id 10 could later find id 9 committed. So every
-- statement that inserts events first takes the schema's events lock, a
-- transaction-level advisory lock held until COMMIT or ROLLBACK: one
-- transaction at a time draws event ids, and the next draws only after it
-- has committed. A reader that sees an id therefore sees every id below
-- it that will ever commit, and reading on from the last id it read
-- misses nothing. The trigger takes the lock for every writer, an agent's
-- plain INSERT included.
CREATE FUNCTION events_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('workspaced events'), hashtext(TG_TABLE_SCHEMA));
  RETURN NULL;
END $$;
CREATE TRIGGER events_order BEFORE INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION events_order();
