package agentfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ok.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "outlink.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		want error
	}{
		{"ok.json", nil},
		{"big.json", workspace.ErrUnsafe},
		{"link.json", workspace.ErrUnsafe},
		{"outlink.json", workspace.ErrUnsafe},
		{"fifo.json", workspace.ErrUnsafe},
		{"tasks", workspace.ErrUnsafe},
		{"missing.json", workspace.ErrNotFound},
	}
	dirf, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dirf.Close()
	read := map[string]func(name string) error{
		"Read":   func(name string) error { _, err := agentfile.Read(root, name, 1024); return err },
		"ReadAt": func(name string) error { _, err := agentfile.ReadAt(dirf, name, 1024); return err },
	}
	for _, tc := range cases {
		for fn, read := range read {
			t.Run(fn+"/"+tc.name, func(t *testing.T) {
				done := make(chan error, 1)
				go func() {
					done <- read(tc.name)
				}()
				select {
				case err := <-done:
					if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
						t.Errorf("err = %v, want %v", err, tc.want)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the read blocks")
				}
			})
		}
	}
	// ReadAt takes one name of the directory, nothing more.
	for _, name := range []string{"", ".", "..", "config/agents.json", "../ok.json", "/etc/hostname"} {
		if _, err := agentfile.ReadAt(dirf, name, 1024); !errors.Is(err, workspace.ErrUnsafe) {
			t.Errorf("agentfile.ReadAt(%q) = %v, want ErrUnsafe", name, err)
		}
	}
}
