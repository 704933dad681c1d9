package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// BenchmarkEntry measures an entry's PUT and GET through the API on a
// real listener against the same operation on the store in-process, on
// every store: what the HTTP door costs.
func BenchmarkEntry(b *testing.B) {
	value := bytes.Repeat([]byte("x"), 1000)
	body, _ := json.Marshal(map[string]any{"value": string(value)})
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			st := openKind(b, k.kind)
			if _, err := st.CreateTask(b.Context(), workspace.NewTaskRequest{ID: "t1", Description: "bench"}); err != nil {
				b.Fatal(err)
			}
			sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
			raw, _ := json.Marshal(string(value))
			srv := server(b, st, &httpauth.Gate{TrustLoopback: true})
			do := func(method, url string, data []byte) {
				req, _ := http.NewRequest(method, url, bytes.NewReader(data))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(httpauth.HeaderAgent, "bench")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s %s: %d", method, url, resp.StatusCode)
				}
			}
			b.Run("put/api", func(b *testing.B) {
				for i := range b.N {
					do("PUT", srv.URL+"/api/v1/tasks/t1/env/k"+strconv.Itoa(i%100), body)
				}
			})
			b.Run("put/store", func(b *testing.B) {
				for i := range b.N {
					if _, err := st.StoreEntry(b.Context(), sc, workspace.StoreRequest{Key: "k" + strconv.Itoa(i%100), Value: raw, Agent: "bench"}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("get/api", func(b *testing.B) {
				for i := range b.N {
					do("GET", srv.URL+"/api/v1/tasks/t1/env/k"+strconv.Itoa(i%100), nil)
				}
			})
			b.Run("get/store", func(b *testing.B) {
				for i := range b.N {
					if _, err := st.GetEntry(b.Context(), sc, "k"+strconv.Itoa(i%100)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
