//go:build !linux

package files

import (
	"errors"
	"os"
)

// syncFS is not available here: records are fsynced one by one.
func syncFS(root *os.Root) error { return errors.ErrUnsupported }
