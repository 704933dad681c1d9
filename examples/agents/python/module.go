// Package python carries the example Python agent module, so that
// `workspaced bench` can run real Python agents with the very code this
// directory shows, wherever the binary runs.
package python

import _ "embed"

// WorkspaceAgent is the text of workspace_agent.py.
//
//go:embed workspace_agent.py
var WorkspaceAgent []byte
