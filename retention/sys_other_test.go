//go:build !linux

package retention

import "os"

// syncFS has no portable equivalent outside Linux; the benchmark then
// starts from whatever the kernel has written.
func syncFS(f *os.File) error { return errUnsupported }
