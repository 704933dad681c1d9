package main

import "context"

// notYet stands in for a command whose file is still being written.
func notYet(name string) func(context.Context, *env, []string) error {
	return func(context.Context, *env, []string) error { return usagef("%s: not available in this build", name) }
}
