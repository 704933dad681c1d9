package main

// Stand-ins until these commands have their own files; delete this file then.
var (
	cmdPreamble      = notYet("preamble")
	cmdSystemContext = notYet("system-context")
	cmdContext       = notYet("context")
)
