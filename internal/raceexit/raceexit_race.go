//go:build race && unix

package raceexit

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

func init() {
	gorace, set := os.LookupEnv("GORACE")
	if !testing.Testing() || strings.Contains(gorace, "atexit_sleep_ms") {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	if set && strings.TrimSpace(gorace) != "" {
		gorace += " " + Sleep
	} else {
		gorace = Sleep
	}
	// On success Exec does not return; on failure the binary runs on as
	// it is, with the default wait.
	_ = syscall.Exec(exe, os.Args, append(env, "GORACE="+gorace))
}
