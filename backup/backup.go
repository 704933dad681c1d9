// Package backup keeps rolling backups of one file (a task's state.json)
// inside a workspace root: take, list, find the newest valid one, restore.
//
// Backups are named <prefix><stamp>.json, the stamp being the UTC time of
// the backup to the nanosecond (20240115T100000.123456789Z), so names sort
// by time. Two backups with the same stamp never overwrite each other: the
// later one gets a counter (<prefix><stamp>-1.json, -2, …). List orders by
// (stamp, counter), which is the order they were taken in.
//
// Taking a backup costs no copy of the data. Take hard-links the current
// file into the backup directory; the caller then atomically renames the
// new version over the file, which leaves the old inode alive under the
// backup's name only. The hot path of a single writer is therefore:
//
//	set.Take("tasks/t1/state.json")              // link, fsync backups/, prune
//	atomicfile.WriteFile(root, "tasks/t1/state.json", next, 0o644) // rename over
//
// or, leaving the fsync of backups/ and the pruning for later (one Settle
// for a burst of writes):
//
//	set.Add("tasks/t1/state.json")               // link
//	atomicfile.WriteFile(root, "tasks/t1/state.json", next, 0o644)
//	…
//	set.Settle()                                 // prune, fsync backups/
//
// This is only correct if the file is always replaced by rename, never
// rewritten in place: an in-place write would change the backup too. Where
// the filesystem refuses hard links, Take falls back to a durable copy.
package backup

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
)

// Defaults for Set fields left zero.
const (
	// DefaultKeep is how many backups a Set keeps when Keep is zero.
	DefaultKeep = 10
	// DefaultMaxBytes bounds a backup read when MaxBytes is zero.
	DefaultMaxBytes = 16 << 20
	// DefaultDirPerm is the mode of a backup directory Take creates.
	DefaultDirPerm os.FileMode = 0o755
	// stampLayout has a fixed width so that stamps sort lexically by time.
	stampLayout = "20060102T150405.000000000Z"
	// maxCollisions bounds the counter search for a free name.
	maxCollisions = 10000
)

// Errors returned by this package.
var (
	// ErrNoValidBackup reports that no backup passed the validator.
	ErrNoValidBackup = errors.New("no valid backup")
	// ErrNotRegular reports a backup (or a file to back up) that is a
	// symlink, a directory, a FIFO or anything but a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge reports a backup over the Set's MaxBytes.
	ErrTooLarge = errors.New("file too large")
	// ErrBadName reports a name that is not one of the Set's backups.
	ErrBadName = errors.New("not a backup name")
)

// Set is the rolling backups of one file, in the directory Dir of Root. All
// paths are slash-separated and relative to Root; nothing outside Root is
// read or written. A Set's methods may be called from several goroutines
// and processes at once (names are taken with exclusive creates), but the
// caller should hold the backed-up file's lock so that Take sees the
// version it is about to replace.
type Set struct {
	// Root is the workspace root every path is relative to.
	Root *os.Root
	// Dir holds the backups, for example "tasks/t1/backups".
	Dir string
	// Prefix starts every backup name, for example "state_".
	Prefix string
	// Keep is how many backups Take leaves (zero or less: DefaultKeep).
	Keep int
	// MaxBytes bounds what is read from a backup (zero: DefaultMaxBytes).
	MaxBytes int64
	// DirPerm is the mode of Dir when Take creates it (zero: DefaultDirPerm).
	DirPerm os.FileMode
	// Now stamps backups (nil: time.Now).
	Now func() time.Time

	// link makes a hard link; tests replace it to drive the copy fallback.
	link func(oldname, newname string) error
}

// Backup is one backup file.
type Backup struct {
	// Name is the file name inside the Set's Dir.
	Name string
	// Path is Dir/Name, relative to the root.
	Path string
	// Time is the stamp in the name (when the backup was taken).
	Time time.Time
	// Size is the file's size in bytes.
	Size int64

	seq int
}

// Skipped is a backup NewestValid passed over, and why.
type Skipped struct {
	Backup Backup
	Err    error
}

func (s *Set) keep() int {
	if s.Keep <= 0 {
		return DefaultKeep
	}
	return s.Keep
}

func (s *Set) maxBytes() int64 {
	if s.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return s.MaxBytes
}

func (s *Set) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// name builds the backup name of stamp t with collision counter seq.
func (s *Set) name(t time.Time, seq int) string { return Name(s.Prefix, t, seq) }

// Name is the name a Set with prefix gives the backup stamped t with
// collision counter seq (0 for the first of its stamp): state_<stamp>.json,
// state_<stamp>-<seq>.json. A store that keeps backups elsewhere names
// them with it.
func Name(prefix string, t time.Time, seq int) string {
	n := prefix + t.UTC().Format(stampLayout)
	if seq > 0 {
		n += "-" + strconv.Itoa(seq)
	}
	return n + ".json"
}

// parse reads a backup name back; ok is false for any other name.
func (s *Set) parse(name string) (t time.Time, seq int, ok bool) {
	rest, ok := strings.CutPrefix(name, s.Prefix)
	if !ok || strings.HasPrefix(name, ".") {
		return time.Time{}, 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".json")
	if !ok || len(rest) < len(stampLayout) {
		return time.Time{}, 0, false
	}
	stamp, counter := rest[:len(stampLayout)], rest[len(stampLayout):]
	t, err := time.Parse(stampLayout, stamp)
	if err != nil {
		return time.Time{}, 0, false
	}
	if counter != "" {
		digits, ok := strings.CutPrefix(counter, "-")
		if !ok || digits == "" || digits[0] == '0' {
			return time.Time{}, 0, false
		}
		seq, err = strconv.Atoi(digits)
		if err != nil || seq <= 0 {
			return time.Time{}, 0, false
		}
	}
	// Only the canonical spelling is ours: it is what Take would write.
	if s.name(t, seq) != name {
		return time.Time{}, 0, false
	}
	return t, seq, true
}

// Take backs up the current content of src (a path relative to Root) into
// Dir as a new backup and prunes Dir to the newest Keep backups. It creates
// Dir if missing. The backup is a hard link to src (no data is copied; see
// the package comment for why the caller must replace src by rename), or a
// durable copy where the filesystem refuses links. When Take returns nil the
// new name and the pruning are durable (Dir is fsynced).
//
// A missing src is not an error: there is nothing to back up, and Take
// returns the zero Backup and nil. A src that is not a regular file is
// refused with ErrNotRegular.
func (s *Set) Take(src string) (Backup, error) {
	b, err := s.Add(src)
	if err != nil {
		return Backup{}, err
	}
	if err := s.Settle(); err != nil {
		return Backup{}, err
	}
	return b, nil
}

// Add is Take without the pruning and without the fsync of Dir: the new
// backup's name is in Dir, but only the next Sync or Settle (or Take)
// makes it durable, and the next Prune or Settle brings Dir back to Keep
// backups. It is for a caller on a hot path whose new version of src is
// durable on its own, so that a backup lost to a crash costs only an
// older version, and which calls Sync soon after.
func (s *Set) Add(src string) (Backup, error) {
	fi, err := s.Root.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return Backup{}, nil
	}
	if err != nil {
		return Backup{}, fmt.Errorf("back up %s: %w", src, err)
	}
	if !fi.Mode().IsRegular() {
		return Backup{}, fmt.Errorf("back up %s: %w (%v)", src, ErrNotRegular, fi.Mode().Type())
	}
	t := s.now().UTC()
	b := Backup{Time: t, Size: fi.Size()}
	link := s.link
	if link == nil {
		link = s.Root.Link
	}
	// Dir is made only when the first name cannot be made for want of
	// it: on the hot path it is there, and a look for it would cost a
	// system call a backup.
	copied, made := false, false
	for seq := 0; ; seq++ {
		if seq == maxCollisions {
			return Backup{}, fmt.Errorf("back up %s: %d backups already stamped %s", src, seq, t.Format(stampLayout))
		}
		b.Name, b.seq = s.name(t, seq), seq
		b.Path = path.Join(s.Dir, b.Name)
		if copied {
			err = s.copyTo(src, b.Path, fi.Mode().Perm())
		} else {
			err = link(src, b.Path)
			if linkUnsupported(err) {
				copied = true
				err = s.copyTo(src, b.Path, fi.Mode().Perm())
			}
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) && !copied {
			// src vanished between Lstat and link: nothing to back up.
			if _, lerr := s.Root.Lstat(src); errors.Is(lerr, fs.ErrNotExist) {
				return Backup{}, nil
			}
		}
		if errors.Is(err, fs.ErrNotExist) && !made {
			// Dir is missing: made, and the same name tried again.
			made = true
			if err := s.mkdir(); err != nil {
				return Backup{}, err
			}
			seq--
			continue
		}
		if err != nil {
			return Backup{}, fmt.Errorf("back up %s as %s: %w", src, b.Path, err)
		}
		break
	}

	return b, nil
}

// mkdir makes Dir and its parents as needed.
func (s *Set) mkdir() error {
	dirPerm := s.DirPerm
	if dirPerm == 0 {
		dirPerm = DefaultDirPerm
	}
	if err := atomicfile.MkdirAll(s.Root, s.Dir, dirPerm); err != nil {
		return fmt.Errorf("create backup directory %s: %w", s.Dir, err)
	}
	return nil
}

// Settle prunes Dir to the newest Keep backups and makes Dir durable (it
// is fsynced), finishing the Adds before it. A missing Dir has nothing to
// settle.
func (s *Set) Settle() error {
	if err := s.Prune(); err != nil {
		return err
	}
	return s.Sync()
}

// Sync makes the Adds before it durable: Dir is fsynced. A missing Dir
// has nothing to sync.
func (s *Set) Sync() error {
	if err := atomicfile.SyncDir(s.Root, s.Dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("back up into %s: %w", s.Dir, err)
	}
	return nil
}

// linkUnsupported reports a link error that a copy can work around: the
// filesystem has no hard links, or the inode has too many.
func linkUnsupported(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.EXDEV, syscall.EMLINK, syscall.ENOSYS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// copyTo writes a copy of src at dst. It claims dst with an exclusive create
// first, so it reports fs.ErrExist exactly as a link would, then replaces
// the placeholder atomically with the bytes.
func (s *Set) copyTo(src, dst string, perm os.FileMode) error {
	data, err := s.read(src)
	if err != nil {
		return err
	}
	f, err := s.Root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.Root, dst, data, perm); err != nil {
		_ = s.Root.Remove(dst)
		return err
	}
	return nil
}

// Prune removes all but the newest Keep backups, oldest first. It does
// not fsync Dir (Settle does both).
func (s *Set) Prune() error {
	list, err := s.list(false)
	if err != nil {
		return err
	}
	old := list[min(len(list), s.keep()):]
	for i := len(old) - 1; i >= 0; i-- {
		if err := s.Root.Remove(old[i].Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune backup %s: %w", old[i].Path, err)
		}
	}
	return nil
}

// List returns the Set's backups, newest first. It ignores dot-files
// (temporary files) and names that are not backups of this Set. Entries
// named like backups are listed whatever their type; reading one that is
// not a regular file fails later with ErrNotRegular. A missing Dir has no
// backups.
func (s *Set) List() ([]Backup, error) { return s.list(true) }

// list is List, with each backup's Size read only when sizes is set
// (Prune, after every burst of writes, needs the names alone: no lstat
// of each backup).
func (s *Set) list(sizes bool) ([]Backup, error) {
	// O_NONBLOCK as the runtime would set it: it tries its poller on every
	// file opened without, which never takes a directory (four fcntl(2)).
	d, err := s.Root.OpenFile(s.Dir, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list backups in %s: %w", s.Dir, err)
	}
	defer d.Close()
	var list []Backup
	if !sizes {
		names, err := d.Readdirnames(-1)
		if err != nil {
			return nil, fmt.Errorf("list backups in %s: %w", s.Dir, err)
		}
		for _, n := range names {
			if t, seq, ok := s.parse(n); ok {
				list = append(list, Backup{Name: n, Path: path.Join(s.Dir, n), Time: t, seq: seq})
			}
		}
	} else {
		entries, err := d.ReadDir(-1)
		if err != nil {
			return nil, fmt.Errorf("list backups in %s: %w", s.Dir, err)
		}
		for _, e := range entries {
			t, seq, ok := s.parse(e.Name())
			if !ok {
				continue
			}
			b := Backup{Name: e.Name(), Path: path.Join(s.Dir, e.Name()), Time: t, seq: seq}
			if fi, err := e.Info(); err == nil {
				b.Size = fi.Size()
			} else if errors.Is(err, fs.ErrNotExist) {
				continue // pruned while listing
			}
			list = append(list, b)
		}
	}
	slices.SortFunc(list, func(a, b Backup) int {
		return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(b.seq, a.seq))
	})
	return list, nil
}

// Read returns the bytes of the backup called name (a name from List). It
// refuses anything but a regular file (ErrNotRegular) and a file over
// MaxBytes (ErrTooLarge).
func (s *Set) Read(name string) ([]byte, error) {
	if _, _, ok := s.parse(name); !ok || strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("read backup %q: %w", name, ErrBadName)
	}
	p := path.Join(s.Dir, name)
	data, err := s.read(p)
	if err != nil {
		return nil, fmt.Errorf("read backup %s: %w", p, err)
	}
	return data, nil
}

// read reads the regular file p without following a symlink in its last
// element and without blocking on a FIFO, up to MaxBytes.
func (s *Set) read(p string) ([]byte, error) {
	lfi, err := s.Root.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%v)", ErrNotRegular, lfi.Mode().Type())
	}
	f, err := s.Root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// The name may have been swapped for a symlink after Lstat.
	if !fi.Mode().IsRegular() || !os.SameFile(lfi, fi) {
		return nil, fmt.Errorf("%w (replaced while opening)", ErrNotRegular)
	}
	limit := s.maxBytes()
	if fi.Size() > limit {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// NewestValid walks the backups newest to oldest and returns the first one
// that can be read and passes valid (nil accepts any readable backup),
// with its bytes. The backups passed over come back in skipped, newest
// first, each with its reason. If none passes, the error wraps
// ErrNoValidBackup and skipped lists every backup.
func (s *Set) NewestValid(valid func([]byte) error) (Backup, []byte, []Skipped, error) {
	list, err := s.List()
	if err != nil {
		return Backup{}, nil, nil, err
	}
	var skipped []Skipped
	for _, b := range list {
		data, err := s.read(b.Path)
		if err == nil && valid != nil {
			err = valid(data)
		}
		if err != nil {
			skipped = append(skipped, Skipped{Backup: b, Err: err})
			continue
		}
		return b, data, skipped, nil
	}
	return Backup{}, nil, skipped, fmt.Errorf("%s: %d backups, none valid: %w", s.Dir, len(list), ErrNoValidBackup)
}

// Restore atomically and durably replaces target (relative to Root) with
// the bytes of the backup called name, a plain file name as List gives it
// (no slashes, no ".."; anything else fails with ErrBadName). A reader of
// target sees the old content or the backup's, never a mix. The backup
// stays. target is written with the backup's permission bits.
func (s *Set) Restore(name, target string) error {
	data, err := s.Read(name)
	if err != nil {
		return fmt.Errorf("restore %s: %w", target, err)
	}
	perm := os.FileMode(0o644)
	if fi, err := s.Root.Lstat(path.Join(s.Dir, name)); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := atomicfile.WriteFile(s.Root, target, data, perm); err != nil {
		return fmt.Errorf("restore %s from %s: %w", target, name, err)
	}
	return nil
}
