// Package tokens is the agents file, config/tokens.json: the bearer
// tokens remote agents present, each naming the agent it stands for and
// what that agent may do. A token is the only source of an agent's
// identity on a server that checks tokens: the agent is never taken from
// a request's arguments.
//
// Only the SHA-256 of each token is stored. Tokens are 32 random bytes,
// so a hash cannot be turned back into its token by guessing, and no
// salt or slow hash is needed. A token presented is hashed and compared
// with every stored hash in constant time.
//
// The file must be a regular file readable by its owner alone (mode 0600
// or stricter): a file readable by the group or the world is refused, and
// so is every token in it. It is written, like every file of the tree,
// under its lock with an atomic rename; a Store reads it again when it
// changes, so a revoked token is refused from the next request on.
//
// A workspace on PostgreSQL keeps its grants in a table instead (the same
// grants, hashes only), which the agents' database role may not read.
// Both are a Keeper: what the servers and `workspaced token` use.
package tokens

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// File is the agents file, relative to the workspace root.
const File = "config/tokens.json"

// Prefix begins every token, so that one found in a log or a paste is
// recognised for what it is.
const Prefix = "wsd_"

// MaxFileBytes bounds the agents file: far more than any real one needs.
const MaxFileBytes = 1 << 20

// AllTasks in a grant's task list lets the token work on every task.
const AllTasks = "*"

// Rights a grant may hold beyond reading and the task's env data.
const (
	RightClaim  = "claim"  // claim_subtask: take a subtask
	RightDone   = "done"   // signal_done: finish a subtask (or cancel the task)
	RightPlan   = "plan"   // write_plan
	RightReview = "review" // write_review
	// RightPanel lets a person log in to the panel with the token: the
	// panel's actions are then recorded in the audit as the token's agent.
	RightPanel = "panel"
)

// Rights lists every right, in the order they are shown.
func Rights() []string { return []string{RightClaim, RightDone, RightPlan, RightReview, RightPanel} }

// Global memory access a grant may hold. Its own agent memory and the
// session memory of the thread it works in are every agent's.
const (
	GlobalNone  = "none"
	GlobalRead  = "read"
	GlobalWrite = "write" // read and write
)

// Grant is one token's entry of the agents file: the agent it stands for
// and what that agent may do.
type Grant struct {
	// Agent is the agent the token stands for: stored_by of its entries,
	// agent_id of its markers, agent= of its events.
	Agent string `json:"agent"`
	// SHA256 is the hex SHA-256 of the token.
	SHA256 string `json:"sha256"`
	// Tasks are the tasks it may work on; ["*"] is every task.
	Tasks []string `json:"tasks"`
	// GlobalMemory is none, read or write. Left out: none.
	GlobalMemory string `json:"global_memory,omitempty"`
	// May lists the rights it holds: claim, done, plan, review.
	May []string `json:"may,omitempty"`
	// Note says what the token is for, for whoever lists them.
	Note string `json:"note,omitempty"`
	// CreatedAt is when it was added.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt, when set, is when the token stops being accepted: the
	// expiry it was added with, or the end of the overlap of a rotation.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RotatedTo is the id of the token that replaced this one (token
	// rotate); this one lives on until ExpiresAt, the overlap.
	RotatedTo string `json:"rotated_to,omitempty"`
	// LastUsedAt is when a server last accepted the token, to the
	// minute (UsageEvery): servers write it at most that often.
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

// ID names a token in listings and revocations: "tk_" and the first 12
// hex digits of its hash. It says nothing the stored hash does not.
func (g Grant) ID() string {
	if len(g.SHA256) < 12 {
		return "tk_" + g.SHA256
	}
	return "tk_" + g.SHA256[:12]
}

// Task reports whether the grant covers task id.
func (g Grant) Task(id string) bool {
	return slices.Contains(g.Tasks, AllTasks) || slices.Contains(g.Tasks, id)
}

// Can reports whether the grant holds right.
func (g Grant) Can(right string) bool { return slices.Contains(g.May, right) }

// ReadGlobal reports whether the grant may read the global memory.
func (g Grant) ReadGlobal() bool {
	return g.GlobalMemory == GlobalRead || g.GlobalMemory == GlobalWrite
}

// WriteGlobal reports whether the grant may write the global memory.
func (g Grant) WriteGlobal() bool { return g.GlobalMemory == GlobalWrite }

// TaskList says the tasks a grant covers, for messages: "every task" or
// "t1, t2".
func (g Grant) TaskList() string {
	if slices.Contains(g.Tasks, AllTasks) {
		return "every task"
	}
	return strings.Join(g.Tasks, ", ")
}

// FileDoc is the agents file.
type FileDoc struct {
	Tokens []Grant `json:"tokens"`
}

// Parse reads an agents file's bytes: one JSON object {"tokens": [...]},
// no unknown field, each grant valid (Check), no hash twice. Any fault
// refuses the whole file, so a file half understood never admits a token.
func Parse(data []byte) (FileDoc, error) {
	var doc FileDoc
	if len(data) > MaxFileBytes {
		return doc, invalid(fmt.Sprintf("is %d bytes, more than %d", len(data), MaxFileBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return FileDoc{}, invalid("not an agents file: " + err.Error())
	}
	if dec.More() {
		return FileDoc{}, invalid("data after the JSON object")
	}
	if doc.Tokens == nil {
		return FileDoc{}, invalid(`no "tokens" list`)
	}
	seen := map[string]bool{}
	for i, g := range doc.Tokens {
		if err := g.Check(); err != nil {
			return FileDoc{}, invalid(fmt.Sprintf("token %d: %v", i+1, err))
		}
		if seen[g.SHA256] {
			return FileDoc{}, invalid(fmt.Sprintf("token %d: the hash of token %s is there twice", i+1, g.ID()))
		}
		seen[g.SHA256] = true
	}
	return doc, nil
}

func invalid(msg string) error {
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + File, Msg: msg,
		Hint: "fix the file, or remove it and add the tokens again"}
}

// Check reports what is wrong with a grant: an agent that is not an id,
// a hash that is not 64 lowercase hex digits, no task or a task that is
// not an id, an unknown global memory access or right.
func (g Grant) Check() error {
	if err := workspace.ValidateID("agent", g.Agent); err != nil {
		return fmt.Errorf("agent %q is not an id", g.Agent)
	}
	if len(g.SHA256) != 64 || strings.ToLower(g.SHA256) != g.SHA256 {
		return fmt.Errorf("agent %s: sha256 must be 64 lowercase hexadecimal digits", g.Agent)
	}
	if _, err := hex.DecodeString(g.SHA256); err != nil {
		return fmt.Errorf("agent %s: sha256 must be 64 lowercase hexadecimal digits", g.Agent)
	}
	if len(g.Tasks) == 0 {
		return fmt.Errorf("agent %s: no tasks (list task ids, or \"*\" for every task)", g.Agent)
	}
	for _, t := range g.Tasks {
		if t == AllTasks {
			continue
		}
		if err := workspace.ValidateID("task id", t); err != nil {
			return fmt.Errorf("agent %s: task %q is not an id", g.Agent, t)
		}
	}
	switch g.GlobalMemory {
	case "", GlobalNone, GlobalRead, GlobalWrite:
	default:
		return fmt.Errorf("agent %s: global_memory must be none, read or write, not %q", g.Agent, g.GlobalMemory)
	}
	for _, r := range g.May {
		if !slices.Contains(Rights(), r) {
			return fmt.Errorf("agent %s: unknown right %q (the rights are %s)", g.Agent, r, strings.Join(Rights(), ", "))
		}
	}
	if g.RotatedTo != "" && !isID(g.RotatedTo) {
		return fmt.Errorf("agent %s: rotated_to %q is not a token id (tk_ and 12 hexadecimal digits)", g.Agent, g.RotatedTo)
	}
	return nil
}

// isID reports whether s is a token id as Grant.ID makes them.
func isID(s string) bool {
	h, ok := strings.CutPrefix(s, "tk_")
	if !ok || len(h) != 12 || strings.ToLower(h) != h {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// Hash is the hex SHA-256 of a token, as the agents file stores it.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// New makes a token: Prefix and 32 random bytes, base64url.
func New() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return Prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// ErrUnknown is a token that is in no grant: never issued, or revoked.
var ErrUnknown = errors.New("unknown or revoked token")

// find returns the grant whose hash is token's. Every stored hash is
// compared, in constant time, whichever matches.
func (d FileDoc) find(token string) (Grant, bool) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, g := range d.Tokens {
		h, err := hex.DecodeString(g.SHA256)
		if err != nil || len(h) != len(sum) {
			continue
		}
		if subtle.ConstantTimeCompare(h, sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Grant{}, false
	}
	return d.Tokens[found], true
}

// Keeper keeps a workspace's grants: the agents file of a directory
// (Tree), a table on PostgreSQL. Lookup reads what is kept at the moment
// it is called, so a grant revoked is refused from the next look-up on.
type Keeper interface {
	// Lookup returns the grant of token: ErrUnknown when no grant has it.
	Lookup(token string) (Grant, error)
	// List returns every grant, in the order they were added.
	List(ctx context.Context) ([]Grant, error)
	// Update changes the grants under their lock: change alters the
	// current ones, and the result is written whole, checked as Parse
	// checks a file. When change returns an error nothing is written.
	// holder names the writer to whoever waits.
	Update(ctx context.Context, holder string, change func(*FileDoc) error) error
	// Now is the clock a new grant's CreatedAt comes from.
	Now() time.Time
}

// Holder is a store that keeps its agents' grants itself: SQLite and
// PostgreSQL, in a tokens table. It is one of a store's optional
// capabilities (asked with workspace.As[tokens.Holder]), declared here
// and not with the others in the workspace package because a Keeper's
// grants are this package's types and this package imports the model.
// The file tree has none: its grants are its agents file (Tree).
type Holder interface {
	Tokens() Keeper
}

// Rememberer is a Keeper that remembers, for each token it looked up
// lately, the grant its last Lookup read and the row it came from: what a
// door admits a request on without a look-up when the store checks that
// row in the operation's own statement (workspace.GrantGuarding). The
// memory is bounded, keyed by the token's hash (never the token), and
// holds only what Lookup read. SQLite's and PostgreSQL's Keepers are
// ones; the tree's is not.
type Rememberer interface {
	// Remembered is the grant the last Lookup of token read, still live
	// at Now, and the guard naming its row; false when none is
	// remembered or it has ended (a Lookup then says why).
	Remembered(token string) (Grant, workspace.GrantGuard, bool)
	// Forget forgets token's grant: its row changed
	// (workspace.ErrGrantChanged), the next request looks it up.
	Forget(token string)
}

// Store answers which grant a token holds, reading the agents file again
// whenever it changed (another file in its place, or a new size or
// modification time), so a token revoked or added is seen from the next
// look-up on. It is safe for concurrent use.
type Store struct {
	root *os.Root
	w    Dir // for Update and Now; nil: read only

	mu   sync.Mutex
	seen fs.FileInfo // the file last read; nil before the first read or when missing
	doc  FileDoc
	err  error
}

// NewStore reads the agents file of the workspace root. A missing file
// holds no token; a file that is not private or does not parse is an
// error here, and from every look-up until it is fixed.
func NewStore(root *os.Root) (*Store, error) {
	s := &Store{root: root}
	_, err := s.current()
	return s, err
}

// Dir is the workspace directory whose agents file Tree keeps: its root,
// a lock on one of its files, its permissions and its clock. The file
// store (workspace/files) is one.
type Dir interface {
	Root() *os.Root
	LockFile(ctx context.Context, name, agent string) (*locking.Lock, error)
	DirPerm() os.FileMode
	Now() time.Time
}

// Tree is the Keeper of the workspace directory w: its agents file. It
// reads nothing until asked.
func Tree(w Dir) *Store { return &Store{root: w.Root(), w: w} }

// List returns the grants of the agents file as it is now.
func (s *Store) List(context.Context) ([]Grant, error) {
	doc, err := Read(s.root)
	return doc.Tokens, err
}

// Update changes the agents file under its lock (see the package
// function Update). A Store made by NewStore only reads.
func (s *Store) Update(ctx context.Context, holder string, change func(*FileDoc) error) error {
	if s.w == nil {
		return errors.New("update " + File + ": this store only reads it")
	}
	return Update(ctx, s.w, holder, change)
}

// Now is the workspace's clock (the wall clock for a Store that only
// reads).
func (s *Store) Now() time.Time {
	if s.w == nil {
		return time.Now().UTC()
	}
	return s.w.Now()
}

// Lookup returns the grant of token: ErrUnknown when no grant has it, the
// file's fault when the agents file cannot be trusted.
func (s *Store) Lookup(token string) (Grant, error) {
	doc, err := s.current()
	if err != nil {
		return Grant{}, err
	}
	g, ok := doc.find(token)
	if !ok {
		return Grant{}, ErrUnknown
	}
	return Live(g, s.Now())
}

// current is the agents file as it is now on disk: one lstat, and a read
// only when the file changed since the last.
func (s *Store) current() (FileDoc, error) {
	fi, err := s.root.Lstat(File)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.seen, s.doc, s.err = nil, FileDoc{}, nil
			return s.doc, nil
		}
		return FileDoc{}, fmt.Errorf("read %s: %w", File, err)
	}
	if s.seen != nil && os.SameFile(s.seen, fi) && s.seen.ModTime().Equal(fi.ModTime()) && s.seen.Size() == fi.Size() && s.seen.Mode() == fi.Mode() {
		return s.doc, s.err
	}
	s.seen = fi
	s.doc, s.err = Read(s.root)
	return s.doc, s.err
}

// Read reads and parses the agents file of root, refusing one that is not
// a regular file readable by its owner alone. A missing file is empty.
func Read(root *os.Root) (FileDoc, error) {
	fi, err := root.Lstat(File)
	if errors.Is(err, fs.ErrNotExist) {
		return FileDoc{Tokens: []Grant{}}, nil
	}
	if err != nil {
		return FileDoc{}, fmt.Errorf("read %s: %w", File, err)
	}
	if !fi.Mode().IsRegular() {
		return FileDoc{}, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + File, Msg: "is not a regular file",
			Hint: "replace it with the file itself"}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return FileDoc{}, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + File,
			Msg:  fmt.Sprintf("has mode %04o: others than its owner may read or change it", fi.Mode().Perm()),
			Hint: "make it private: chmod 600 " + File}
	}
	data, err := agentfile.Read(root, File, MaxFileBytes)
	if err != nil {
		return FileDoc{}, err
	}
	return Parse(data)
}

// Update changes the agents file of w under its lock: it reads the file,
// lets change alter it, and writes the result atomically with mode 0600.
// When change returns an error nothing is written.
func Update(ctx context.Context, w Dir, holder string, change func(*FileDoc) error) error {
	l, err := w.LockFile(ctx, File, holder)
	if err != nil {
		return err
	}
	defer l.Release()
	doc, err := Read(w.Root())
	if err != nil {
		return err
	}
	if err := change(&doc); err != nil {
		return err
	}
	if doc.Tokens == nil {
		doc.Tokens = []Grant{}
	}
	data, err := atomicfile.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", File, err)
	}
	if _, err := Parse(data); err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(w.Root(), "config", w.DirPerm()); err != nil {
		return fmt.Errorf("create config: %w", err)
	}
	return atomicfile.WriteFile(w.Root(), File, data, 0o600)
}
