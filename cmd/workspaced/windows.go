//go:build windows

package main

// workspaced is not built on Windows: it leans on POSIX renames, flock,
// Unix sockets and signals throughout. Run it under WSL 2, where it is a
// Linux program. The import below names no package on purpose, so that
// `go build` and `go install` stop at it, before compiling anything, with
// this explanation as their first and only error rather than one from deep
// inside a dependency (.ci/cross-compile checks that it stays so).
import _ "workspaced_does_not_build_on_windows__use_WSL_2"
