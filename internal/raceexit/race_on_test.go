//go:build race && unix

package raceexit_test

const raceEnabled = true
