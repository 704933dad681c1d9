// Package sqlstore is the one SQL store of a workspace: the queries and
// the control flow of every feature the database stores share (products,
// plans, outputs and reviews, threads, tasks and agent cards, entries,
// backups, retention), written once over a Driver. A database is a
// driver: workspace/postgres and workspace/sqlite keep only what truly
// differs — their connections, migrations, leadership, notifications,
// how a write transaction holds a task, how they classify their errors
// and the few fragments of SQL their dialects spell differently.
//
// Its pure functions (checking a request before it reaches the
// database, building the documents and events a write stores, judging
// what a read finds) serve the drivers' own paths too, the daemon's
// commit among them.
package sqlstore
