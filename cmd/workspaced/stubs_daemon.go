package main

// Stand-ins until these commands have their own files; delete this file then.
var (
	cmdServe  = notYet("serve")
	cmdStatus = notYet("status")
	cmdState  = notYet("state")
	cmdBackup = notYet("backup")
	cmdBench  = notYet("bench")
)
