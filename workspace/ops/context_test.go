package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// checkContextGolden compares a bundle with testdata/context/<name>.json
// (structurally, without Text) and its Text with <name>.txt.
func checkContextGolden(t *testing.T, name string, b ContextBundle) {
	t.Helper()
	text := b.Text
	b.Text = ""
	checkGoldenJSON(t, "context/"+name+".json", b)
	checkGolden(t, "context/"+name+".txt", []byte(text))
}

func omittedReason(b ContextBundle, ref string) string {
	for _, o := range b.Omitted {
		if o.Item == ref {
			return o.Reason
		}
	}
	return ""
}

func includedRefs(b ContextBundle) []string {
	var refs []string
	for _, s := range b.Sections {
		for _, it := range s.Items {
			refs = append(refs, s.Name+"|"+it.Ref)
		}
	}
	return refs
}

func sectionTokens(b ContextBundle) int {
	n := 0
	for _, s := range b.Sections {
		for _, it := range s.Items {
			n += it.Tokens
		}
	}
	return n
}

func TestContextGolden(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	full, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	// The active thread section holds the header and its three buffers.
	active := full.Sections[0].Items
	if len(active) != 4 {
		t.Fatalf("active thread items: %v", includedRefs(full))
	}
	hydrated := 0
	for _, it := range active {
		hydrated += it.Tokens
	}
	tests := []struct {
		name   string
		opt    ContextOptions
		check  func(t *testing.T, b ContextBundle)
		budget int
	}{
		{name: "unlimited", opt: ContextOptions{Unlimited: true}, check: func(t *testing.T, b ContextBundle) {
			if len(b.Omitted) != 0 {
				t.Errorf("omitted %v with no budget", b.Omitted)
			}
		}},
		{name: "large-budget", opt: ContextOptions{Budget: 100000}, check: func(t *testing.T, b ContextBundle) {
			if len(b.Omitted) != 0 || !reflect.DeepEqual(includedRefs(b), includedRefs(full)) {
				t.Errorf("large budget left out %v", b.Omitted)
			}
		}},
		{name: "just-too-small", opt: ContextOptions{Budget: hydrated - 1}, check: func(t *testing.T, b ContextBundle) {
			last := active[len(active)-1]
			if r := omittedReason(b, last.Ref); !strings.HasPrefix(r, "over budget: needs ") {
				t.Errorf("last buffer %s: reason %q, want over budget", last.Ref, r)
			}
			for _, it := range active[:len(active)-1] {
				if omittedReason(b, it.Ref) != "" {
					t.Errorf("%s left out although it fits", it.Ref)
				}
			}
		}},
		{name: "zero", opt: ContextOptions{Budget: 0}, check: func(t *testing.T, b ContextBundle) {
			if b.Used != 0 || len(includedRefs(b)) != 0 {
				t.Errorf("zero budget included %v", includedRefs(b))
			}
			if len(b.Omitted) != len(includedRefs(full)) {
				t.Errorf("zero budget omitted %d items, want %d", len(b.Omitted), len(includedRefs(full)))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Over(w).Context(t.Context(), "th_observer", tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if b.Used != sectionTokens(b) {
				t.Errorf("used %d, items add up to %d", b.Used, sectionTokens(b))
			}
			if !tc.opt.Unlimited && b.Used > tc.opt.Budget {
				t.Errorf("used %d over the budget %d", b.Used, tc.opt.Budget)
			}
			for _, s := range b.Sections {
				for _, it := range s.Items {
					if it.Tokens != EstimateTokens(renderItem(it)) || !strings.Contains(b.Text, renderItem(it)) {
						t.Errorf("item %s: tokens %d or rendering not in Text", it.Ref, it.Tokens)
					}
				}
			}
			tc.check(t, b)
			checkContextGolden(t, tc.name, b)
		})
	}
}

func TestContextContents(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 100000})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"active thread|thread:th_observer", "active thread|env:arc_task", "active thread|notes/observations.md", "active thread|memory:session:scratch",
		// env:arc_task of the card is already hydrated with the thread.
		"global buffers|memory:global:house_style",
		// th_tool and th_solver are active, th_terse pending, th_direct done.
		"open threads|thread:th_solver", "open threads|thread:th_terse", "open threads|thread:th_tool", "open threads|thread:training-001",
		"env manifest|manifest:arc_task",
	}
	if got := includedRefs(b); !reflect.DeepEqual(got, want) {
		t.Errorf("items:\n got %v\nwant %v", got, want)
	}
	for _, s := range []string{"chain: human → coordinator → solver → you (observer)", `"input_grid":[[0,1,2]`, "- corners swap", "maybe a 180 degree rotation",
		"Short sentences.", "coordinator → solver · active", "arc_task (v1, "} {
		if !strings.Contains(b.Text, s) {
			t.Errorf("text lacks %q", s)
		}
	}
}

func TestContextDeterministic(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	var first []byte
	for i := 0; i < 3; i++ {
		b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 300})
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = data
		} else if !bytes.Equal(data, first) {
			t.Fatalf("run %d differs:\n%s\n%s", i, data, first)
		}
	}
}

func TestContextBadBuffers(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	taskDir := filepath.Join(w.Dir(), "tasks", "training-001")
	if err := os.Symlink(filepath.Join(taskDir, "notes", "observations.md"), filepath.Join(taskDir, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(taskDir, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(taskDir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taskDir, "big.txt"), bytes.Repeat([]byte("x"), workspace.BufferMaxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taskDir, "blob.bin"), []byte{0xff, 0xfe, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	bufs := []string{
		"env:no_such_key", "memory:global:no_such_key", "memory:agent:no_such_key", "memory:session:no_such_key",
		"memory:weird:x", "memory:nokey", "notes/missing.md",
		"../training-002/task.json", "notes/../../training-002/task.json", "/etc/passwd",
		"link.md", "etc/passwd", "pipe", "big.txt", "blob.bin", "notes",
		"notes/observations.md",
	}
	if _, err := w.UpdateThread(context.Background(), "training-001", "th_observer", "observer", workspace.ThreadUpdate{Buffers: &bufs}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"env:no_such_key":                      "not found",
		"memory:global:no_such_key":            "not found",
		"memory:agent:no_such_key":             "not found",
		"memory:session:no_such_key":           "not found",
		"memory:weird:x":                       "refused: unknown memory scope",
		"memory:nokey":                         "refused: a memory buffer is",
		"notes/missing.md":                     "not found",
		"../training-002/task.json":            "refused: names a file outside the task directory",
		"notes/../../training-002/task.json":   "refused: names a file outside the task directory",
		"/etc/passwd":                          "refused: an absolute path",
		"link.md":                              "refused: is a symlink",
		"etc/passwd":                           "refused:",
		"pipe":                                 "refused: is a FIFO",
		"big.txt":                              "refused: is 262,145 bytes, over the 262,144-byte limit",
		"blob.bin":                             "refused: not UTF-8 text",
		"notes":                                "refused: is a directory",
		"thread:th_observer (never refused)":   "",
		"notes/observations.md (still read)":   "",
		"memory:global:house_style (card buf)": "",
	}
	b := withDeadlineBundle(t, w, "th_observer", ContextOptions{Budget: 100000})
	for ref, prefix := range want {
		if prefix == "" {
			continue
		}
		r := omittedReason(b, ref)
		if !strings.HasPrefix(r, prefix) {
			t.Errorf("%s: reason %q, want prefix %q", ref, r, prefix)
		}
	}
	if strings.Contains(b.Text, "root:") || strings.Contains(b.Text, "xxxxxxxx") {
		t.Errorf("text holds content of a refused file")
	}
	got := includedRefs(b)
	for _, ref := range []string{"active thread|thread:th_observer", "active thread|notes/observations.md", "global buffers|memory:global:house_style", "global buffers|env:arc_task"} {
		if !contains(got, ref) {
			t.Errorf("%s missing from %v", ref, got)
		}
	}
	checkContextGolden(t, "bad-buffers", b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// withDeadlineBundle runs Context under a deadline: a FIFO buffer must not
// block the read.
func withDeadlineBundle(t *testing.T, w *files.Store, thread string, opt ContextOptions) ContextBundle {
	t.Helper()
	var b ContextBundle
	err := withDeadline(t, "context", func() error {
		var err error
		b, err = Over(w).Context(t.Context(), thread, opt)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestContextSkipsUnreadableThread(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	name := filepath.Join(w.Dir(), "tasks", "training-001", "threads", "th_junk.json")
	if err := os.WriteFile(name, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if r := omittedReason(b, "thread:th_junk"); !strings.HasPrefix(r, "unreadable: ") {
		t.Errorf("junk thread: reason %q", r)
	}
}

func TestContextRefusesNegativeBudget(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	if _, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: -1}); err == nil {
		t.Fatal("negative budget accepted")
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"→", 1}, {strings.Repeat("x", 10000), 2500}} {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%d bytes) = %d, want %d", len(tc.in), got, tc.want)
		}
	}
}

// BenchmarkContext assembles the context of one thread in a task with 100
// threads, 1,000 env entries of 100 KiB each and 50 skills of 2 KiB, of
// which the thread's mode and tags choose 20 and core. Only the two
// hydrated buffers' values are read; the manifest streams past the values;
// only the front matter of the skills not chosen is read.
func BenchmarkContext(b *testing.B) {
	ctx := context.Background()
	w, err := files.Init(b.TempDir(), workspace.Options{Now: func() time.Time { return fixtureNow }})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if _, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "bench", Description: "A big task"}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(w.Dir(), "tasks", "bench")
	write := func(name string, v any) {
		data, err := atomicfile.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "env"), 0o755); err != nil {
		b.Fatal(err)
	}
	value, _ := json.Marshal(strings.Repeat("v", 100<<10))
	for i := 0; i < 1000; i++ {
		key := fmt.Sprintf("key_%04d", i)
		write(path.Join("env", key+".json"), workspace.Entry{Key: key, ShortDescription: "Entry " + key + " of the benchmark.", StoredBy: "solver",
			CreatedAt: fixtureNow, UpdatedAt: fixtureNow, Version: 1, Value: value})
	}
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("th_%03d", i)
		status := []string{"active", "pending", "done"}[i%3]
		write(path.Join("threads", id+".json"), workspace.Thread{ID: id, ParentID: "bench", TaskID: "bench", From: "coordinator", To: "solver",
			Message: "Work on part " + id, CreatedAt: fixtureNow, Status: status, Concern: "Part " + id, Approach: "Carefully",
			Buffers: []string{"env:key_0001", "env:key_0002"}, Progress: "Half done", SkillTags: []string{"t1", "t2"}, PrimaryMode: "m3"})
	}
	if err := os.MkdirAll(filepath.Join(w.Dir(), workspace.SkillsDir), 0o755); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("A line of what the skill teaches, with an example.\n", 40)
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("skill_%02d", i)
		if i == 0 {
			name = CoreSkill
		}
		text := workspace.ComposeSkill(workspace.SkillMeta{Description: "Skill " + name, Tags: []string{fmt.Sprintf("t%d", i%10)}, Modes: []string{fmt.Sprintf("m%d", i%5)}}, body)
		if err := os.WriteFile(filepath.Join(w.Dir(), workspace.SkillFile(name)), text, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bundle, err := Over(w).Context(b.Context(), "th_000", ContextOptions{Budget: DefaultContextBudget})
	if err != nil {
		b.Fatal(err)
	}
	if len(bundle.Omitted) == 0 || bundle.Used == 0 || len(bundle.Sections[1].Items) == 0 {
		b.Fatalf("unexpected bundle: used %d, omitted %d, skills %d", bundle.Used, len(bundle.Omitted), len(bundle.Sections[1].Items))
	}
	chosen := len(bundle.Sections[1].Items)
	for _, o := range bundle.Omitted {
		if strings.HasPrefix(o.Item, "skill:") {
			chosen++
		}
	}
	if chosen != 21 {
		b.Fatalf("%d skills chosen, want 21 (core, 10 of mode m3, 10 of tags t1 and t2)", chosen)
	}
	// CPU time per op is reported beside wall time: on a loaded machine
	// it is the steadier of the two.
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	n := 0
	for b.Loop() {
		if _, err := Over(w).Context(b.Context(), "th_000", ContextOptions{Budget: DefaultContextBudget}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
}
