// Package dbstore holds what the database stores (workspace/sqlite and
// workspace/postgres) decide alike: checking a request before it reaches
// the database, building the documents and events a write stores, and
// judging what a read finds. Its functions are pure, or take the one
// read or write they need as a function, so each store keeps only what
// truly differs: its SQL dialect, its driver calls, how it classifies a
// driver's errors and how it represents time.
package dbstore
