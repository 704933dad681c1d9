-- What the verdict on a journaled marker needs of the state the commit
-- wrote with it (sqlstore.VerdictExcerpt): the state's head, plan_status,
-- the subtask the marker names and the errors of its seq, with the
-- version and epoch of that state. A waiter reads its verdict from its
-- own journal row while the state row still has that stamp, instead of
-- scanning the whole document; a row without one (journaled before this
-- migration, or imported) is answered from the document as before.
ALTER TABLE journal ADD COLUMN verdict text;
