//go:build !linux

package retention

import "os"

// renameExchange has no portable equivalent outside Linux; the pruner falls
// back to two renames and a recovery step.
func renameExchange(dir *os.File, a, b string) error { return errUnsupported }

// syncFS has no portable equivalent outside Linux; the pruner fsyncs each
// summary directory instead.
func syncFS(f *os.File) error { return errUnsupported }
