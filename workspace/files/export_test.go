package files

// CommitWaiters is the number of waiters of the store's Commits, for
// the tests of package files_test.
func (s *Store) CommitWaiters() int { return s.hub.Waiting() }
