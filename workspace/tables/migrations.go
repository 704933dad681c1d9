package tables

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema migration of a database store,
// migrations/NNNN_name.sql in the store's embedded files.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the migrations/NNNN_name.sql files of fsys in version
// order. A file otherwise named, or versions that do not run 1, 2, 3…
// without a gap, is an error: the files are part of the binary.
func Migrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 {
			return nil, fmt.Errorf("migration %s is not named NNNN_name.sql", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: versions must run 1, 2, 3… without gaps", m.Version, m.Name)
		}
	}
	return ms, nil
}

// Newest is the newest version among the migrations of fsys, the schema
// version a binary holding them knows. Its files are part of the binary,
// so one that does not read is a bug: Newest panics.
func Newest(fsys fs.FS) int {
	ms, err := Migrations(fsys)
	if err != nil {
		panic(err)
	}
	return len(ms)
}
