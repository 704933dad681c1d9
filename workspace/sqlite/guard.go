package sqlite

import (
	"strings"

	sqlite3 "modernc.org/sqlite"
)

// writerMark names the collation every connection of this process has,
// and an agent's connection (Python's sqlite3, the sqlite3 shell) has
// not: the triggers of migration 0002_guard refuse a write of states,
// journal, backups, events or schema_migrations on a connection without
// it, with a message saying so.
//
// The triggers look it up in pragma_collation_list: a lookup, unlike a
// call, cannot fail to prepare on a connection that lacks it ("no such
// function" would hide the message). A collation rather than a function
// because the trigger runs once per row written and the collation list
// has four rows, the function list hundreds: the lookup costs the
// daemon microseconds a row instead of a few hundred.
//
// The guard catches mistakes, not attacks: an agent can register the
// collation itself, or drop the triggers (docs/SQLITE.md).
const writerMark = "workspaced_writer"

// The driver registers a collation for every connection it opens after
// the registration, process-wide; doing it once at init, before any
// Open, makes every connection of the binary a writer. It orders as
// BINARY does; nothing sorts by it.
func init() {
	sqlite3.MustRegisterCollationUtf8(writerMark, strings.Compare)
}
