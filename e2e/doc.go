// Package e2e holds the end-to-end test packages that run the workspaced
// binary as separate processes (see internal/clitest): e2e/sqlite for
// sqlite: roots. They live apart from cmd/workspaced so that no test
// package runs for long.
package e2e
