// Package e2e holds the end-to-end test packages that run the workspaced
// binary as separate processes, built once per go test run for all of
// them (internal/testbin, through internal/clitest):
//
//   - e2e/sqlite: sqlite: roots — agents in other languages, contention,
//     crashes and faults (WORKSPACED_TORTURE_LONG=1 for the crash test's
//     long sizes);
//   - e2e/files: directory roots where the filesystem is the test — a full
//     disk and read-only remounts on a loop-mounted ext4 (root only; they
//     skip without it), the inotify watch limit, rescans of thousands of
//     tasks while cleanup removes them, and the daemon at scale (the
//     gated TestServeScale, BenchmarkServeStartup, BenchmarkListing);
//   - e2e/torture: directory roots under abuse — the daemon SIGKILLed at
//     random moments while agents finish subtasks in bursts
//     (WORKSPACED_TORTURE_LONG=1 for the crash tests' long sizes), and
//     many processes updating one entry at once, through --if-version
//     and under `workspaced lock`;
//   - e2e/missed: markers the daemon's wake-ups miss — dropped while no
//     daemon runs, in a task directory moved in, a burst larger than the
//     inotify queue;
//   - e2e/bench: `workspaced bench`, whole workloads at a time, on files
//     and on PostgreSQL.
//
// They live apart from cmd/workspaced, whose tests check each command's
// behaviour, so that no test package runs for long: go test runs
// packages side by side, and each stays well under five minutes with
// -race on two cores.
package e2e
