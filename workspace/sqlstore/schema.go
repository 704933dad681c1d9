package sqlstore

import (
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Schema names a store's schema in the errors of opening it.
type Schema struct {
	Op       string // "open <where>"
	InitHint string // how to create a workspace there
	// NotInitialized and TooNew are the store's sentinel errors.
	NotInitialized, TooNew error
}

// Judge refuses a schema at version v (0: no workspace) without a
// workspace, or newer than known, the newest this binary knows.
func (sc Schema) Judge(v, known int) error {
	switch {
	case v == 0:
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: sc.Op, Err: sc.NotInitialized, Hint: sc.InitHint}
	case v > known:
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: sc.Op, Err: sc.TooNew,
			Msg:  fmt.Sprintf("schema version %d, this workspaced knows up to %d", v, known),
			Hint: "upgrade workspaced to the version that migrated this database"}
	}
	return nil
}
