package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/gofrs/flock"
)

// The data directory initdb makes is the same for every cluster of one
// installation and one user, and initdb costs about a second of CPU
// (several of wall on a busy machine) for each test binary. So initdb runs
// once per machine, into a template under os.TempDir(), and each cluster
// starts from a copy of the template's data directory.
//
// A template is named by a key: pgtest's format, the binaries (their path,
// size and modification time: an upgraded PostgreSQL makes a new one),
// initdb's arguments and the user the server runs as. It is made under an
// exclusive flock of NAME.lock, in a temporary directory renamed into
// place once initdb has finished: a template that has its name is whole.
// It is copied under a shared flock, so that one found broken (a cluster
// copied from it does not start) is removed only while nobody copies it;
// the cluster is then made by a fresh initdb. Temporary directories left
// by a maker that died are removed by the next one.

// templateFormat changes when the way a template is made or read
// changes, so that a template an older pgtest made is left alone.
const templateFormat = 1

// initdbArgs are initdb's arguments after -D DIR. The server runs with
// the superuser "postgres" and trust over the socket, which only the
// cluster's owner (and root) can reach.
var initdbArgs = []string{"-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"}

// templateRoot is the directory templates are kept in; tests point it
// elsewhere.
var templateRoot = os.TempDir()

// initdbRuns counts the runs of initdb by this process, for tests.
var initdbRuns atomic.Int64

// initdb runs initdb as cred, making the data directory data.
func initdb(bin, data string, cred *syscall.Credential) error {
	initdbRuns.Add(1)
	cmd := exec.Command(filepath.Join(bin, "initdb"), append([]string{"-D", data}, initdbArgs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = filepath.Dir(data)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// templateDir is the directory of the template for the binaries in bin
// run as cred (nil: this process's user), under templateRoot.
func templateDir(bin string, cred *syscall.Credential) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n%s\n%q\n", templateFormat, bin, initdbArgs)
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(bin, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", name, fi.Size(), fi.ModTime().UnixNano())
	}
	uid, gid := os.Geteuid(), os.Getegid()
	if cred != nil {
		uid, gid = int(cred.Uid), int(cred.Gid)
	}
	fmt.Fprintf(h, "%d:%d\n", uid, gid)
	name := fmt.Sprintf("pgtest-template-%d-%s", uid, hex.EncodeToString(h.Sum(nil)[:8]))
	return filepath.Join(templateRoot, name), nil
}

// whole reports whether the template dir holds a data directory. The
// rename makes a template whole or absent; this catches one whose files
// were removed since (a cleaner of old temporary files).
func whole(dir string) bool {
	for _, f := range []string{"PG_VERSION", "global/pg_control", "postgresql.conf", "base"} {
		if _, err := os.Stat(filepath.Join(dir, "data", f)); err != nil {
			return false
		}
	}
	return true
}

// lockTemplate takes a flock of name (creating it): shared, to copy a
// template, or exclusive, to make or drop one. Closing it releases it.
func lockTemplate(name string, shared bool) (*flock.Flock, error) {
	fl := flock.New(name)
	lock := fl.Lock
	if shared {
		lock = fl.RLock
	}
	if err := lock(); err != nil {
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	return fl, nil
}

// fromTemplate makes data, the data directory of a new cluster run as
// cred, a copy of the machine's template for bin, making the template
// first when there is none.
func fromTemplate(bin, data string, cred *syscall.Credential) error {
	dir, err := templateDir(bin, cred)
	if err != nil {
		return err
	}
	lock, err := lockTemplate(dir+".lock", true)
	if err != nil {
		return err
	}
	if !whole(dir) {
		lock.Close()
		if lock, err = lockTemplate(dir+".lock", false); err != nil {
			return err
		}
		if err := makeTemplate(bin, dir, cred); err != nil {
			lock.Close()
			return err
		}
	}
	defer lock.Close()
	return copyTree(filepath.Join(dir, "data"), data, cred)
}

// makeTemplate makes the template dir, unless another process made it
// meanwhile; the caller holds its exclusive flock.
func makeTemplate(bin, dir string, cred *syscall.Credential) error {
	if whole(dir) {
		return nil
	}
	// Nobody makes or copies a template now: what is there under its name
	// (a template broken since) or beside it (the temporary directory of
	// a maker that died) is left over.
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	left, _ := filepath.Glob(dir + ".tmp-*")
	for _, l := range left {
		_ = os.RemoveAll(l)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(tmp, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := initdb(bin, filepath.Join(tmp, "data"), cred); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// dropTemplate removes the template for bin run as cred, once nobody
// copies it: a cluster copied from it did not start.
func dropTemplate(bin string, cred *syscall.Credential) error {
	dir, err := templateDir(bin, cred)
	if err != nil {
		return err
	}
	lock, err := lockTemplate(dir+".lock", false)
	if err != nil {
		return err
	}
	defer lock.Close()
	return os.RemoveAll(dir)
}

// copyTree copies the directory tree src to dst (which must not exist):
// directories and regular files with their permissions, owned by cred
// when it is set.
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("copy %s: neither a directory nor a regular file", p)
		}
		if cred != nil {
			return os.Chown(to, int(cred.Uid), int(cred.Gid))
		}
		return nil
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
