//go:build !linux

package main

import "os/exec"

// killWithParent has no portable equivalent outside Linux: there, CMD may
// outlive a killed workspaced (and its lock).
func killWithParent(cmd *exec.Cmd) {}

func startLocked(cmd *exec.Cmd) error { return cmd.Start() }
