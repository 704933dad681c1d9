package ops

import (
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

func invalidf(op, hint, format string, args ...any) error {
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

func notFoundf(op, hint, format string, args ...any) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}
