package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FSInfo is the filesystem a run measured on, as /proc/self/mountinfo
// shows it.
type FSInfo struct {
	MountPoint string `json:"mount_point"`
	Type       string `json:"type"`
	Source     string `json:"source"`
	// Options are the mount's options, then the filesystem's own.
	Options string `json:"options"`
	// Journal is "yes" or "no" for ext2/3/4 when dumpe2fs could read the
	// device's features, else "".
	Journal string `json:"journal,omitempty"`
}

func (f FSInfo) String() string {
	if f.Type == "" {
		return "unknown"
	}
	s := fmt.Sprintf("%s on %s at %s (%s)", f.Type, f.Source, f.MountPoint, f.Options)
	if f.Journal != "" {
		s += ", journal: " + f.Journal
	}
	return s
}

// describeFS returns the filesystem holding dir; a failure to read it is
// an FSInfo of unknown type, not an error (the figures stand without it).
func describeFS(dir string) FSInfo {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return FSInfo{}
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return FSInfo{}
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return FSInfo{}
	}
	f, ok := mountOf(string(data), abs)
	if !ok {
		return FSInfo{}
	}
	if strings.HasPrefix(f.Type, "ext") {
		if out, err := exec.Command("dumpe2fs", "-h", f.Source).Output(); err == nil {
			f.Journal = "no"
			if hasJournal(string(out)) {
				f.Journal = "yes"
			}
		}
	}
	return f
}

// mountOf finds, in the text of /proc/self/mountinfo, the mount holding
// path (absolute, symlinks resolved): the last listed of those with the
// longest mount point that is path or a parent of it, since a later mount
// on the same point hides an earlier one.
func mountOf(mountinfo, path string) (FSInfo, bool) {
	var best FSInfo
	found := false
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional…] - type source super-options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 2 {
			continue
		}
		mp := unescapeMount(a[4])
		if !within(path, mp) || (found && len(mp) < len(best.MountPoint)) {
			continue
		}
		f := FSInfo{MountPoint: mp, Type: b[0], Source: unescapeMount(b[1]), Options: a[5]}
		if len(b) > 2 {
			f.Options += "; " + b[2]
		}
		best, found = f, true
	}
	return best, found
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, …).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// hasJournal reads dumpe2fs -h output: is has_journal among the features?
func hasJournal(dump string) bool {
	sc := bufio.NewScanner(strings.NewReader(dump))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Filesystem features:"); ok {
			for _, f := range strings.Fields(v) {
				if f == "has_journal" {
					return true
				}
			}
		}
	}
	return false
}

// ErrNeedsRoot: making and loop-mounting a filesystem image takes root.
var ErrNeedsRoot = errors.New("needs root")

// Ext4 is a journaled ext4 filesystem made for one run: a sparse image
// file, formatted with mkfs.ext4's defaults (which include the journal)
// and loop-mounted on a directory. Close unmounts it and removes both.
type Ext4 struct {
	// Dir is where it is mounted.
	Dir   string
	image string
}

// Ext4Size is the size of the image the bench makes (sparse: only what the
// run writes takes room on the disk holding it).
const Ext4Size = 1 << 30

// MountExt4 makes a journaled ext4 image of size bytes in parent and
// mounts it. isRoot says whether the process runs as root; without root it
// fails at once with ErrNeedsRoot, before making anything.
func MountExt4(ctx context.Context, parent string, size int64, isRoot bool) (*Ext4, error) {
	if !isRoot {
		return nil, fmt.Errorf("bench: --ext4 makes and loop-mounts a filesystem image, which %w", ErrNeedsRoot)
	}
	img, err := os.CreateTemp(parent, ".workspaced-bench-*.ext4")
	if err != nil {
		return nil, fmt.Errorf("bench: make the ext4 image: %w", err)
	}
	e := &Ext4{image: img.Name()}
	err = img.Truncate(size)
	if cerr := img.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(e.image)
		return nil, fmt.Errorf("bench: size the ext4 image: %w", err)
	}
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", e.image).CombinedOutput(); err != nil {
		os.Remove(e.image)
		return nil, fmt.Errorf("bench: mkfs.ext4 %s: %v: %s", e.image, err, strings.TrimSpace(string(out)))
	}
	if e.Dir, err = os.MkdirTemp(parent, ".workspaced-bench-ext4-"); err != nil {
		os.Remove(e.image)
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "mount", "-o", "loop", e.image, e.Dir).CombinedOutput(); err != nil {
		os.Remove(e.Dir)
		os.Remove(e.image)
		return nil, fmt.Errorf("bench: mount -o loop %s: %v: %s", e.image, err, strings.TrimSpace(string(out)))
	}
	return e, nil
}

// Close unmounts the filesystem (trying again for a few seconds while it
// is still busy) and removes the mount point and the image. It runs
// without a context: it must happen also after an interrupt.
func (e *Ext4) Close() error {
	var err error
	for try := 0; try < 50; try++ {
		var out []byte
		if out, err = exec.Command("umount", e.Dir).CombinedOutput(); err == nil {
			break
		}
		err = fmt.Errorf("umount %s: %v: %s", e.Dir, err, strings.TrimSpace(string(out)))
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("bench: %w (the image %s is left)", err, e.image)
	}
	return errors.Join(os.Remove(e.Dir), os.Remove(e.image))
}
