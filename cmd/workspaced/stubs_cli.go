package main

// Stand-ins until these commands have their own files; delete this file then.
var (
	cmdInit     = notYet("init")
	cmdTask     = notYet("task")
	cmdPlan     = notYet("plan")
	cmdOutput   = notYet("output")
	cmdReview   = notYet("review")
	cmdClaim    = notYet("claim")
	cmdDone     = notYet("done")
	cmdEnv      = notYet("env")
	cmdMemory   = notYet("memory")
	cmdThread   = notYet("thread")
	cmdEvents   = notYet("events")
	cmdValidate = notYet("validate")
	cmdLocks    = notYet("locks")
	cmdLock     = notYet("lock")
	cmdSchema   = notYet("schema")
	cmdVersion  = notYet("version")
)
