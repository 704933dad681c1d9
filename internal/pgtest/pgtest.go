// Package pgtest gives tests a real PostgreSQL: the server named by
// $WORKSPACED_TEST_POSTGRES when it is set, else a throwaway cluster
// started from the installed binaries (a data directory in a temporary
// directory, copied from one initdb made once per machine, a unix socket
// in it, no TCP), run as the user nobody when the tests run
// as root, since PostgreSQL refuses to run as root.
//
// One cluster serves a whole test binary (with fsync=off unless the
// binary runs benchmarks): TestMain calls Main, which
// starts it on first use and tears it down after the tests. A test gets a
// schema of its own from Schema, in the one database the test binary's
// tests share (a workspace lives in a schema: the root URL's ?schema=),
// or, where it needs a whole database (roles logging in to it, a bench
// making schemas of its own), a database of its own from DB; either way
// tests do not see each other's tables. Migrated gives a schema already
// migrated: a copy of a template the migrations ran on once per binary.
package pgtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/internal/optdep"
)

// EnvURL names the variable that points the tests at an existing server
// (a superuser, or a role that may create databases and roles).
const EnvURL = "WORKSPACED_TEST_POSTGRES"

// ErrNotInstalled says neither $WORKSPACED_TEST_POSTGRES nor the
// PostgreSQL binaries are there.
var ErrNotInstalled = errors.New("no PostgreSQL: set " + EnvURL + " to a server's URL, or install the postgresql package (initdb and postgres under /usr/lib/postgresql/*/bin)")

// Cluster is a PostgreSQL server for tests. The methods are safe for
// concurrent use.
type Cluster struct {
	base *url.URL // the server, with its maintenance database

	// Only for a cluster this package started:
	bin  string // directory of initdb and postgres
	dir  string // temporary directory: data/ and the socket
	cred *syscall.Credential

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{} // closed when proc has exited
	log  *os.File

	dbs     atomic.Int64
	schemas atomic.Int64

	sharedDB     sync.Once
	sharedDBName string
	sharedDBErr  error

	template template // see Migrated
}

// template is a schema migrated once, and the SQL that makes a copy of it
// under another name (see Cluster.Migrated).
type template struct {
	once sync.Once
	name string // the schema, in the shared database
	sql  string // pg_dump of it; "" when pg_dump cannot be had
	err  error
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
)

// Main runs the tests of a package with one shared cluster, started the
// first time a test asks for it, and stops and removes it afterwards:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	optdep.Report()
	if shared != nil && shared.sharedDBName != "" {
		shared.dropDB(context.Background(), shared.sharedDBName)
	}
	if shared != nil {
		if err := shared.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// Shared returns the test binary's cluster, starting it on first use; the
// test is skipped when no PostgreSQL can be had, and fails when one is
// installed but does not start.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Start(context.Background()) })
	if errors.Is(sharedErr, ErrNotInstalled) {
		optdep.Skip(t, "postgres", sharedErr.Error())
	}
	if sharedErr != nil {
		t.Fatalf("start PostgreSQL: %v", sharedErr)
	}
	return shared
}

// DB creates an empty database on the shared cluster for t and returns
// its URL; it is dropped when t ends.
func DB(t testing.TB) string {
	t.Helper()
	return Shared(t).DB(t)
}

// Schema returns the root URL of a schema of t's own on the shared
// cluster; see Cluster.Schema.
func Schema(t testing.TB) string {
	t.Helper()
	return Shared(t).Schema(t)
}

// Migrated returns the root URL of a schema of t's own on the shared
// cluster, migrated; see Cluster.Migrated.
func Migrated(t testing.TB, migrate func(ctx context.Context, root string) error) string {
	t.Helper()
	return Shared(t).Migrated(t, migrate)
}

// Start returns the server of $WORKSPACED_TEST_POSTGRES, or starts a new
// cluster from the installed binaries. It returns ErrNotInstalled when
// neither is there.
func Start(ctx context.Context) (*Cluster, error) {
	if env := os.Getenv(EnvURL); env != "" {
		u, err := url.Parse(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		return &Cluster{base: u}, nil
	}
	bin := findBin()
	if bin == "" {
		return nil, ErrNotInstalled
	}
	c := &Cluster{bin: bin}
	if err := c.init(true); err != nil {
		c.removeDir()
		return nil, err
	}
	err := c.Start(ctx)
	if err != nil {
		// A template broken in a way its check does not see (a file
		// emptied by a crash of the machine that wrote it): drop it, and
		// make this cluster by its own initdb.
		c.removeDir()
		if derr := dropTemplate(bin, c.cred); derr != nil {
			return nil, fmt.Errorf("%w (from the template; removing it: %v)", err, derr)
		}
		c = &Cluster{bin: bin}
		if err := c.init(false); err != nil {
			c.removeDir()
			return nil, err
		}
		err = c.Start(ctx)
	}
	if err != nil {
		c.removeDir()
		return nil, err
	}
	return c, nil
}

// findBin is the newest /usr/lib/postgresql/<version>/bin holding initdb
// and postgres, or the directory of initdb on $PATH.
func findBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d
		}
	}
	return ""
}

func version(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// init makes the temporary directory and the data directory in it: a
// copy of the machine's template (template.go), or, without one, made by
// initdb.
func (c *Cluster) init(useTemplate bool) error {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return err
	}
	c.dir = dir
	if c.cred, err = serverCred(); err != nil {
		return err
	}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return err
		}
	}
	if useTemplate {
		err = fromTemplate(c.bin, c.dataDir(), c.cred)
	} else {
		err = initdb(c.bin, c.dataDir(), c.cred)
	}
	if err != nil {
		return err
	}
	c.base = &url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}}.Encode()}
	return nil
}

// serverCred is the user the server runs as: nobody when the tests run as
// root, else (nil) the tests' own.
func serverCred() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL will not run as root, and there is no user nobody: %w", err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

// benchmarking reports whether the test binary runs benchmarks (-test.bench).
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// Start starts the cluster's server (again, after Stop) and waits until it
// accepts connections. It fails for a server of $WORKSPACED_TEST_POSTGRES.
func (c *Cluster) Start(ctx context.Context) error {
	if c.dir == "" {
		return errors.New("pgtest: the server of " + EnvURL + " is not started by the tests")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return errors.New("pgtest: already running")
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := []string{"-D", c.dataDir(), "-k", c.dir,
		"-c", "listen_addresses=", "-c", "max_connections=300", "-c", "shared_buffers=64MB"}
	if !benchmarking() {
		// A throwaway server needs no flush to the disk at each commit:
		// a process killed, the server's own included, loses nothing
		// already written; only a crash of the machine would, and the
		// cluster does not outlive the tests. A benchmark run keeps the
		// durable default, so that its figures are the database's.
		args = append(args, "-c", "fsync=off")
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = serverAttr(c.cred)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.proc, c.done, c.log = cmd, done, logf
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, c.base.String())
		cancel()
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-done:
			c.proc = nil
			logf.Close()
			return fmt.Errorf("postgres exited at start: %s", c.tail())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres does not accept connections: %v: %s", err, c.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail is the end of the server's log.
func (c *Cluster) tail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop shuts the server down (fast shutdown: open sessions are ended,
// committed transactions kept) and waits until it has exited.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	_ = c.proc.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.proc.Process.Kill()
		<-c.done
	}
	c.proc = nil
	c.log.Close()
	return nil
}

// Restart stops and starts the server.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.Stop(); err != nil {
		return err
	}
	return c.Start(ctx)
}

// Close stops the server and removes its directory; for the server of
// $WORKSPACED_TEST_POSTGRES it does nothing.
func (c *Cluster) Close() error {
	if c.dir == "" {
		return nil
	}
	err := c.Stop()
	c.removeDir()
	return err
}

func (c *Cluster) removeDir() {
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// URL is the URL of database db on the server, as the superuser.
func (c *Cluster) URL(db string) string {
	u := *c.base
	u.Path = "/" + db
	return u.String()
}

// Admin connects to the server's maintenance database as the superuser.
func (c *Cluster) Admin(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.base.String())
}

// DB creates an empty database for t, named after it, and returns its URL.
// The database is dropped when t ends.
func (c *Cluster) DB(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	name := dbName(t.Name(), c.dbs.Add(1))
	conn, err := c.Admin(ctx)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() { c.dropDB(ctx, name) })
	return c.URL(name)
}

// dropDB drops database name, ending its sessions; a server that is gone
// (a test stopped it) has nothing to drop.
func (c *Cluster) dropDB(ctx context.Context, name string) {
	conn, err := c.Admin(ctx)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// Schema returns the root URL of a schema for t, postgres://…?schema=NAME,
// in the database the test binary's tests share, created on first use and
// dropped by Main. NAME is made of the test's name and unique; nothing is
// created under it (the workspace's init creates the schema and migrates
// it), and when t ends it is dropped with all it holds. Sessions still
// holding locks in it delay the drop for at most a few seconds; a schema
// left then goes with the database.
func (c *Cluster) Schema(t testing.TB) string {
	t.Helper()
	return c.schema(t, schemaName(t.Name(), c.schemas.Add(1)))
}

// Migrated is Schema with the schema made as migrate makes it: migrate
// runs once per test binary, on a template schema of the shared database
// (the workspace's init: `Init(ctx, root)`), and each schema after is a
// copy of the template replayed from its pg_dump, so that the migrations
// run once per binary, not once per test. Where pg_dump cannot be had or
// cannot dump the server (one of $WORKSPACED_TEST_POSTGRES newer than
// the client programs here), migrate runs on each schema instead. The
// template is made by the first call's migrate: a test binary passes the
// same one to every call.
func (c *Cluster) Migrated(t testing.TB, migrate func(ctx context.Context, root string) error) string {
	t.Helper()
	ctx := context.Background()
	tp := &c.template
	tp.once.Do(func() {
		tp.name = "pgtest_template_" + strconv.Itoa(os.Getpid())
		root, err := c.rootOf(tp.name)
		if err != nil {
			tp.err = err
			return
		}
		if tp.err = migrate(ctx, root); tp.err != nil {
			tp.err = fmt.Errorf("migrate the template schema: %w", tp.err)
			return
		}
		tool := findTool("pg_dump")
		if tool == "" {
			return
		}
		// A pg_dump that cannot dump this server (one older than it) leaves
		// each schema to be migrated.
		out, err := exec.CommandContext(ctx, tool, "--schema="+tp.name, "--inserts", "--no-owner", "--no-privileges",
			"--dbname="+c.URL(c.sharedDBName)).Output()
		if err == nil {
			tp.sql = sqlOnly(string(out))
		}
	})
	if tp.err != nil {
		t.Fatalf("the migrated template: %v", tp.err)
	}
	name := schemaName(t.Name(), c.schemas.Add(1))
	root := c.schema(t, name)
	if tp.sql == "" {
		if err := migrate(ctx, root); err != nil {
			t.Fatalf("migrate %s: %v", name, err)
		}
		return root
	}
	conn, err := pgx.Connect(ctx, c.URL(c.sharedDBName))
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	// The names the dump gives are the template's, every one qualified
	// with it, and unique to it (the test binary's process id).
	if _, err := conn.Exec(ctx, strings.ReplaceAll(tp.sql, tp.name, name)); err != nil {
		t.Fatalf("copy the template schema into %s: %v", name, err)
	}
	return root
}

// sqlOnly is a pg_dump script without its lines for psql (\restrict and
// \unrestrict, in the dumps of recent versions): statements alone, for
// one Exec.
func sqlOnly(dump string) string {
	var b strings.Builder
	for line := range strings.Lines(dump) {
		if !strings.HasPrefix(line, `\`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// schema is Schema of a schema named name.
func (c *Cluster) schema(t testing.TB, name string) string {
	t.Helper()
	ctx := context.Background()
	root, err := c.rootOf(name)
	if err != nil {
		t.Fatalf("the tests' database: %v", err)
	}
	db := c.URL(c.sharedDBName)
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			return // the server is gone (a test stopped it): the database goes with it
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "SET lock_timeout = '5s'")
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	})
	return root
}

// rootOf is the root URL of schema name in the database the test binary's
// tests share, which it creates on first use.
func (c *Cluster) rootOf(name string) (string, error) {
	ctx := context.Background()
	c.sharedDB.Do(func() {
		name := dbName("shared", c.dbs.Add(1))
		conn, err := c.Admin(ctx)
		if err != nil {
			c.sharedDBErr = err
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			c.sharedDBErr = fmt.Errorf("create database %s: %w", name, err)
			return
		}
		c.sharedDBName = name
	})
	if c.sharedDBErr != nil {
		return "", c.sharedDBErr
	}
	u, err := url.Parse(c.URL(c.sharedDBName))
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("schema", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// schemaName is a schema name a root URL accepts (lower case letters,
// digits and underscores, at most 40) made of the test's name, unique by
// n.
func schemaName(test string, n int64) string {
	s := sanitize(test)
	suffix := fmt.Sprintf("_%d", n)
	if len(s) > 40-2-len(suffix) {
		s = s[:40-2-len(suffix)]
	}
	return "t_" + s + suffix
}

// dbName is a database name made of the test's name, lower case letters,
// digits and underscores, unique by n, within PostgreSQL's 63 bytes.
func dbName(test string, n int64) string {
	s := sanitize(test)
	suffix := fmt.Sprintf("_%d_%d", os.Getpid(), n)
	if len(s) > 40 {
		s = s[:40]
	}
	return "t_" + s + suffix
}

// sanitize is name in lower case letters, digits and underscores.
func sanitize(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Tool is the path of a PostgreSQL client program (psql, pg_dump) of the
// installed binaries, else from $PATH; the test is skipped without it.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p := findTool(name); p != "" {
		return p
	}
	optdep.Skipf(t, "postgres", "no %s: install the postgresql package", name)
	return ""
}

// findTool is the path of the client program name of the installed
// binaries, else from $PATH, else "".
func findTool(name string) string {
	if bin := findBin(); bin != "" && isExec(filepath.Join(bin, name)) {
		return filepath.Join(bin, name)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}
