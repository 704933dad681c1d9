package machine

// Every step of every test checks the fold's tally against a fresh count
// of the state it folds; benchmarks turn that off (unverified).
func init() { verifyTally = true }

// unverified turns the tally check off and returns what turns it back on.
func unverified() func() {
	verifyTally = false
	return func() { verifyTally = true }
}
