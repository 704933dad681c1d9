package postgres

import (
	"context"
	"fmt"
)

// MarkersWaiting is how many markers wait in the markers table to be
// taken, every task together: one count of a table the daemon keeps
// short (it deletes each marker it takes). The daemon's metrics read it
// at each scrape.
func (s *Store) MarkersWaiting(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM markers").Scan(&n); err != nil {
		return 0, fmt.Errorf("count the markers waiting: %w", err)
	}
	return n, nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("the database does not answer: %w", err)
	}
	return nil
}
