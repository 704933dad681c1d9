// Package deps pins the module's dependencies while the packages that use
// them are being written; it is removed once each is imported for real.
package deps

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/gofrs/flock"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
)
