package jsonschema

import (
	"strings"
	"sync"
	"testing"
)

var drafts = []*Draft{Draft4, Draft6, Draft7, Draft2019, Draft2020}

// compiledAtInit are the drafts whose meta-schema was compiled when the
// package's init functions had run; this file's init runs after those of
// the package's own files.
var compiledAtInit []string

func init() {
	for _, d := range drafts {
		if d.meta != nil {
			compiledAtInit = append(compiledAtInit, d.String())
		}
	}
}

// TestNoMetaCompiledAtInit: starting a program that imports the package
// compiles no meta-schema.
func TestNoMetaCompiledAtInit(t *testing.T) {
	if len(compiledAtInit) > 0 {
		t.Fatalf("meta-schemas compiled at init: %v", compiledAtInit)
	}
}

// TestMetaOnFirstUse: each draft's meta-schema, compiled on first use,
// from several goroutines at once, accepts a valid schema and the
// meta-schema itself, and rejects an invalid schema with the error of
// its validation against the meta-schema.
func TestMetaOnFirstUse(t *testing.T) {
	var wg sync.WaitGroup
	for _, d := range drafts {
		for range 3 {
			wg.Go(func() {
				c := NewCompiler()
				c.Draft = d
				if err := c.AddResource("ok.json", strings.NewReader(`{"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}`)); err != nil {
					t.Error(err)
					return
				}
				sch, err := c.Compile("ok.json")
				if err != nil {
					t.Errorf("%v: valid schema: %v", d, err)
					return
				}
				if err := sch.Validate(map[string]any{"a": ""}); err == nil {
					t.Errorf("%v: {a: \"\"} valid under minLength 1", d)
				}
				if err := c.AddResource("bad.json", strings.NewReader(`{"type": 1}`)); err != nil {
					t.Error(err)
					return
				}
				_, err = c.Compile("bad.json")
				if err == nil || !strings.Contains(err.Error(), "does not validate with") {
					t.Errorf("%v: {\"type\": 1} compiled: %v", d, err)
				}
				meta, err := c.Compile(d.URL())
				if err != nil || meta != d.getMeta() || meta.meta != meta {
					t.Errorf("%v: its meta-schema: %v, %p, want %p", d, err, meta, d.getMeta())
				}
			})
		}
	}
	wg.Wait()
	for _, d := range drafts {
		if err := d.getMeta().Validate(map[string]any{"minLength": -1}); err == nil {
			t.Errorf("%v: its meta-schema accepts minLength -1", d)
		}
	}
}
