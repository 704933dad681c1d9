package clitest

import (
	"flag"
	"strconv"
)

// Waiting sets how many tests of the package run at once (-parallel) to
// n when the command line does not say: for a package whose tests spend
// their time waiting on the processes they start (the binary, a browser,
// PostgreSQL, Python, node) rather than computing, the default of one
// test per CPU leaves the CPUs idle most of the run. -parallel given on
// the command line wins. Call it first in TestMain, before Main.
func Waiting(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err)
		}
	}
}
