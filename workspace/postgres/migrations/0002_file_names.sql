-- The names the file tree gives some documents, kept so that an export
-- writes them back byte for byte: the journal file a record was written
-- in (a file workspace groups the records of one chunk in one file; ''
-- for a record the daemon wrote here, whose chunk is told by its
-- taken_at and epoch) and a backup's file name ('' for one the daemon
-- kept here, named from its saved_at).
ALTER TABLE journal ADD COLUMN file text NOT NULL DEFAULT '';
ALTER TABLE backups ADD COLUMN name text NOT NULL DEFAULT '';
