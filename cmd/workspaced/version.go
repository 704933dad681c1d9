package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/workspaced
//
// Left empty, it comes from the build information (the module version of
// a 'go install ...@version'), else it is "devel".
var version = ""

// versionString is the version this binary reports.
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

const versionUsage = `workspaced version — print the version.

Usage:
  workspaced version

Prints "workspaced <version>" (set at build time with
-ldflags "-X main.version=...", else the module version when installed with
go install, else "devel"), the VCS revision when known, and the Go version.
'workspaced --version' and 'workspaced -v' print the same.

Examples:
  workspaced version
  workspaced --version
  go build -ldflags "-X main.version=v0.1.0" -o workspaced ./cmd/workspaced && ./workspaced version

Exit codes: 0 ok, 2 usage.
`

func cmdVersion(ctx context.Context, e *env, args []string) error {
	fs := newFlags("version")
	if err := parse(e, fs, versionUsage, args); err != nil {
		return err
	}
	v, extra := versionString(), ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" && mv != v {
			extra += " module " + mv
		}
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			extra += " commit " + rev + modified
		}
	}
	fmt.Fprintf(e.stdout, "workspaced %s\n", v)
	if extra != "" {
		fmt.Fprintf(e.stdout, "build:%s\n", extra)
	}
	fmt.Fprintf(e.stdout, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
