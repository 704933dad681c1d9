-- The agents' bearer tokens of a workspace on PostgreSQL, as the file
-- tree's config/tokens.json keeps them: one row per grant, the SHA-256 of
-- the token (never the token itself), and the grant as that file holds
-- it. The agent role gets no right on this table (the grants name it
-- nowhere): only the daemon's role, or the owner, reads or changes it.
CREATE TABLE tokens (
  sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  n      bigint NOT NULL, -- the grant's place in the list, in the order added
  doc    text NOT NULL    -- the grant, JSON
);
