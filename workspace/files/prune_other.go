//go:build !linux

package files

import "os"

// renameExchange has no portable equivalent outside Linux; the pruner falls
// back to two renames and a recovery step.
func renameExchange(dir *os.File, a, b string) error { return errUnsupported }

// openWhileRemoving is off where an open directory may not be removable.
const openWhileRemoving = false
