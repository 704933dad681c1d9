// Package locking takes the exclusive flock(2) locks that guard every
// read-modify-write of a shared workspace file, the same locks agents in any
// language take with their own flock.
//
// A lock is a sidecar file, <dir>/.locks/<name>.lock for a file
// <dir>/<name> (see LockPathFor), locked with flock(2) through
// github.com/gofrs/flock (AcquireAt: directly, on a descriptor opened in
// an open directory). Lock files are never deleted: deleting one while a
// waiter has it open would let two processes hold "the" lock on two different
// inodes. The kernel drops a flock when the last descriptor of its open file
// description closes, so a holder that dies (even by SIGKILL) never leaves a
// stale lock behind.
//
// flock locks belong to an open file description, not to a process: every
// Acquire opens its own descriptor, so two Acquire calls in one process on
// the same path exclude each other exactly as two processes do. Any other
// program can take the same lock with its own flock call (flock(1), Python's
// fcntl.flock); fcntl/lockf record locks do not exclude flock holders.
//
// After taking the lock, Acquire writes a holder record (pid, agent, since,
// host) into the lock file for diagnostics; a waiter that times out reads it
// to name the holder in its error. The record is best effort: a holder that
// is not this package (flock(1)) writes none, so the record read by a waiter
// may describe an earlier holder.
package locking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Defaults for Options fields left zero.
const (
	// DefaultTimeout bounds a lock wait when Options.Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// DefaultPoll is the first pause between two lock attempts; pauses
	// double (with jitter) up to MaxPoll.
	DefaultPoll = 5 * time.Millisecond
	// MaxPoll caps the pause between two lock attempts, unless
	// Options.Poll is larger still.
	MaxPoll = 50 * time.Millisecond
	// DefaultPerm is the mode of a lock file this package creates; its
	// directory gets the same mode with x added wherever r is set (0755).
	DefaultPerm os.FileMode = 0o644
	// maxHolderBytes bounds how much of a lock file ReadHolder reads.
	maxHolderBytes = 64 << 10
)

// Errors returned by this package.
var (
	// ErrLocked reports a lock held by someone else. Every *TimeoutError
	// satisfies errors.Is(err, ErrLocked).
	ErrLocked = errors.New("lock is held by another holder")
	// ErrNoHolder reports a lock file that holds no holder record (never
	// locked by this package, or locked by another tool).
	ErrNoHolder = errors.New("no holder record")
)

// Holder is the record a lock holder leaves in the lock file. It describes
// the latest holder that wrote one; once that holder releases the lock the
// record stays and is stale (use Held to know whether anyone holds it now).
type Holder struct {
	PID   int       `json:"pid"`
	Agent string    `json:"agent,omitempty"`
	Since time.Time `json:"since"`
	Host  string    `json:"host,omitempty"`
}

// String describes the holder for an error message:
// "pid 4242 (agent worker_1) since 2024-01-15T10:00:00Z".
func (h *Holder) String() string {
	if h == nil {
		return "an unknown holder"
	}
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Agent != "" {
		s += fmt.Sprintf(" (agent %s)", h.Agent)
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// TimeoutError reports a lock that could not be taken: Acquire gave up after
// waiting Waited, or TryAcquire found it held (Waited is then zero). Holder
// is the record found in the lock file when giving up, nil if there was none
// (the holder may be a tool that writes no record). It satisfies
// errors.Is(err, ErrLocked).
type TimeoutError struct {
	Path   string
	Holder *Holder
	Waited time.Duration
}

// Error names the lock and its holder, for example "lock
// tasks/t1/.locks/task.lock held by pid 4242 (agent worker_1) since
// 2024-01-15T10:00:00Z: gave up after 30s".
func (e *TimeoutError) Error() string {
	s := fmt.Sprintf("lock %s held by %s", e.Path, e.Holder)
	if e.Waited > 0 {
		s += fmt.Sprintf(": gave up after %s", e.Waited.Round(time.Millisecond))
	}
	return s
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrLocked }

// Options tunes Acquire and TryAcquire. The zero value is ready to use.
type Options struct {
	// Timeout bounds the wait: zero means DefaultTimeout, a negative value
	// waits until the context is done.
	Timeout time.Duration
	// Agent names the holder in the holder record (optional).
	Agent string
	// Perm is the mode of a lock file created here (zero: DefaultPerm).
	// A missing parent directory is created with Perm plus x wherever r
	// is set (0644 → 0755, 0600 → 0700).
	Perm os.FileMode
	// Poll is the first pause between attempts (zero: DefaultPoll).
	Poll time.Duration
	// Now stamps the holder record (nil: time.Now).
	Now func() time.Time
	// NoParents: the lock file's directory must exist. A lock in a
	// directory removed meanwhile then fails (fs.ErrNotExist) instead of
	// making the directory again.
	NoParents bool
}

func (o Options) perm() os.FileMode {
	if o.Perm == 0 {
		return DefaultPerm
	}
	return o.Perm.Perm()
}

// dirPerm adds search permission wherever read permission is granted.
func dirPerm(p os.FileMode) os.FileMode {
	return p | (p&0o444)>>2
}

// Lock is one held lock. Release it exactly when the guarded work is done;
// Release is idempotent and safe for concurrent use.
type Lock struct {
	path string
	fl   locker
	once sync.Once
	err  error
}

// locker is a lock's own descriptor: a *flock.Flock, or a descriptor
// opened in a directory (AcquireAt).
type locker interface {
	TryLock() (bool, error)
	Unlock() error
}

// Path returns the lock file's path as given to Acquire.
func (l *Lock) Path() string { return l.path }

// Release unlocks and closes the lock's descriptor. The lock file and its
// holder record stay. Calling Release again returns the first result.
func (l *Lock) Release() error {
	l.once.Do(func() {
		if err := l.fl.Unlock(); err != nil {
			l.err = fmt.Errorf("release lock %s: %w", l.path, err)
		}
	})
	return l.err
}

// Acquire takes the exclusive lock at path, waiting up to opt.Timeout. It
// creates the lock file and its parent directory if missing. On timeout it
// returns a *TimeoutError naming the holder; if ctx is done first it
// returns an error wrapping ctx.Err() (which does not satisfy ErrLocked).
// Once the lock is taken the holder record is written into the lock file;
// if that fails the lock is released and the error returned.
func Acquire(ctx context.Context, path string, opt Options) (*Lock, error) {
	fl, err := newFlock(path, opt)
	if err != nil {
		return nil, err
	}
	return acquire(ctx, path, fl, func(data []byte) error { return writeRecord(path, data) }, opt)
}

// acquire takes fl, the lock at path, waiting as Acquire does, and writes
// the holder record with write once it has it.
func acquire(ctx context.Context, path string, fl locker, write func([]byte) error, opt Options) (*Lock, error) {
	timeout := opt.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	poll := opt.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	maxPoll := max(MaxPoll, poll)
	start := time.Now()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("acquire lock %s: %w", path, err)
		}
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("acquire lock %s: %w", path, err)
		}
		if ok {
			return hold(path, fl, write, opt)
		}
		// Full jitter over [poll/2, poll) keeps waiters from retrying
		// in lockstep.
		pause := poll/2 + rand.N(poll/2+1)
		wait := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, fmt.Errorf("acquire lock %s: %w", path, ctx.Err())
		case <-deadline:
			wait.Stop()
			// One last attempt: the holder may have released just now.
			if ok, err := fl.TryLock(); err == nil && ok {
				return hold(path, fl, write, opt)
			}
			h, _ := ReadHolder(path)
			return nil, &TimeoutError{Path: path, Holder: h, Waited: time.Since(start)}
		case <-wait.C:
		}
		poll = min(poll*2, maxPoll)
	}
}

// probeWindow is how long TryAcquire keeps trying a lock it found taken
// before it calls it held: Held takes a free lock for the instant of its
// check, and a lock taken only by such a check is free again within
// microseconds.
const probeWindow = 50 * time.Millisecond

// TryAcquire takes the lock at path if it is free, without waiting for a
// holder. If it is held it returns a *TimeoutError with Waited zero
// (errors.Is(err, ErrLocked) is true) whose Holder is the record found in
// the lock file. A lock taken for a moment by a check (Held, as `status`
// makes) is not held: TryAcquire tries again for up to probeWindow before
// it says so.
func TryAcquire(path string, opt Options) (*Lock, error) {
	fl, err := newFlock(path, opt)
	if err != nil {
		return nil, err
	}
	for give := time.Now().Add(probeWindow); ; {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("acquire lock %s: %w", path, err)
		}
		if ok {
			return hold(path, fl, func(data []byte) error { return writeRecord(path, data) }, opt)
		}
		if time.Now().After(give) {
			h, _ := ReadHolder(path)
			return nil, &TimeoutError{Path: path, Holder: h}
		}
		time.Sleep(time.Millisecond)
	}
}

// newFlock prepares the lock of path. Its descriptor is opened read-only
// (flock needs no more, and the holder record is written through a second
// descriptor): a lock held for long, like the daemon's, then does not keep
// the filesystem from being remounted read-only.
func newFlock(path string, opt Options) (*flock.Flock, error) {
	if !opt.NoParents {
		if err := os.MkdirAll(filepath.Dir(path), dirPerm(opt.perm())); err != nil {
			return nil, fmt.Errorf("create lock directory for %s: %w", path, err)
		}
	}
	return flock.New(path, flock.SetPermissions(opt.perm()), flock.SetFlag(os.O_CREATE|os.O_RDONLY)), nil
}

// hold writes the holder record into the freshly locked file. It writes
// through a second descriptor: closing that descriptor does not drop the
// flock, which belongs to the Flock's own open file description. The record
// is written at offset 0 before the file is truncated to its length, so a
// reader racing the write sees a whole record (old or new), possibly
// followed by the tail of the old one, which ReadHolder ignores.
func hold(path string, fl locker, write func([]byte) error, opt Options) (*Lock, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	h := Holder{PID: os.Getpid(), Agent: opt.Agent, Since: now().UTC()}
	h.Host, _ = os.Hostname()
	data, err := json.Marshal(h)
	if err == nil {
		data = append(data, '\n')
		err = write(data)
	}
	if err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("write holder record of lock %s: %w", path, err)
	}
	return &Lock{path: path, fl: fl}, nil
}

func writeRecord(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return overwrite(f, data)
}

// overwrite makes data the whole content of f, and closes f.
func overwrite(f *os.File, data []byte) error {
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHolder reads the holder record in the lock file at path. The record
// is the latest one written and may be stale: nobody may hold the lock now.
// A lock file without a record gives an error wrapping ErrNoHolder; a
// missing lock file gives an error wrapping fs.ErrNotExist.
func ReadHolder(path string) (*Holder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read holder of lock %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHolderBytes))
	if err != nil {
		return nil, fmt.Errorf("read holder of lock %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("read holder of lock %s: %w", path, ErrNoHolder)
	}
	// Decode only the first value: a record shorter than the previous one
	// may briefly be followed by the old record's tail.
	var h Holder
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&h); err != nil {
		return nil, fmt.Errorf("read holder of lock %s: %w: %v", path, ErrNoHolder, err)
	}
	return &h, nil
}

// Held reports whether the lock at path is held right now, by trying it
// from a descriptor of its own and releasing it at once; a lock held by
// this very process counts as held. The holder record is returned when one
// is readable (it may be stale when held is false). A missing lock file is
// not held and is not created.
func Held(path string) (bool, *Holder, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil, nil
	}
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryLock()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("check lock %s: %w", path, err)
	}
	if ok {
		if err := fl.Unlock(); err != nil {
			return false, nil, fmt.Errorf("check lock %s: %w", path, err)
		}
	}
	h, _ := ReadHolder(path)
	return !ok, h, nil
}

// LockPathFor returns the lock file of a workspace file, the name every
// agent uses for it: "<dir>/<name>" → "<dir>/.locks/<name>.lock"
// (slash-separated, pure).
// "env/arc_task.json" gives "env/.locks/arc_task.json.lock".
func LockPathFor(file string) string {
	dir, name := path.Split(path.Clean(file))
	return path.Join(dir, ".locks", name+".lock")
}
