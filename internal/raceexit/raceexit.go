// Package raceexit shortens the race detector's wait at the exit of the
// test binary that imports it (for its side effect, from a _test.go
// file).
//
// A binary built with -race waits a second before it exits, whenever a
// goroutine besides the main one is alive (always, in a test binary), so
// that a race in one still running can be reported: the race runtime's
// atexit_sleep_ms, 1000 by default. Over the dozens of test binaries of
// `go test -race ./...` on two cores that is a second of nothing for each,
// while the runs are meant to be measured. Imported, this package starts
// the test binary again, at once, with atexit_sleep_ms=50 added to
// $GORACE: still a wait for a goroutine that races at exit, a twentieth
// of the default. A $GORACE that sets atexit_sleep_ms itself is left as it
// is, and so is a binary built without -race or outside a test.
package raceexit

// Sleep is the setting added to $GORACE.
const Sleep = "atexit_sleep_ms=50"
