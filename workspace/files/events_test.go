package files

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

func TestAppendAndReadEvents(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	if err := w.AppendEvents(t.Context(), "t1", []workspace.Event{{Name: "a", TaskID: "t1", Args: []string{"x y"}}, {Name: "b", TaskID: "t1"}}); err != nil {
		t.Fatal(err)
	}
	evs, bad, err := w.ReadEvents(t.Context(), "t1")
	if err != nil || len(bad) != 0 || len(evs) != 3 || evs[1].Args[0] != "x y" || evs[2].Name != "b" || !evs[2].Time.Equal(t0) {
		t.Errorf("ReadEvents = %+v, %v, %v", evs, bad, err)
	}
	if _, _, err := w.ReadEvents(t.Context(), "../x"); err == nil {
		t.Errorf("ReadEvents of a bad id succeeded")
	}
}
