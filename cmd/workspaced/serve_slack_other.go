//go:build !linux

package main

import "time"

// daemonTimerSlack is the timer slack serve runs with (Linux only).
const daemonTimerSlack = time.Millisecond

// withTimerSlack does nothing here: the timer slack is Linux's.
func withTimerSlack(time.Duration) error { return nil }
