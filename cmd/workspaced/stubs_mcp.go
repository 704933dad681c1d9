package main

// Stand-ins until these commands have their own files; delete this file then.
var (
	cmdDemo = notYet("demo")
)
