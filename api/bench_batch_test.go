package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/pairbench"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
)

// BenchmarkMemoryBatchAPI: 16 writers at once, each storing 16 items of
// 1 KiB through the API on a real listener with a bearer token, by one
// PUT /memory/items each or by one POST /memory/batch of its 16,
// alternated within each round so that both meet the same load; items a
// second each way and their ratio, on every store. Run it with
//
//	go test -run '^$' -bench MemoryBatchAPI -benchtime 10x ./api/
func BenchmarkMemoryBatchAPI(b *testing.B) {
	const writers, each = 16, 16
	value := map[string]any{"text": strings.Repeat("x", 1000)}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			st := openKind(b, k.kind)
			keeper, err := service.Tokens("bench", st)
			if err != nil {
				b.Fatal(err)
			}
			tok, _, err := tokens.Add(b.Context(), keeper, tokens.Grant{Agent: "bench", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalWrite})
			if err != nil {
				b.Fatal(err)
			}
			srv := server(b, st, &httpauth.Gate{Keeper: keeper})
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
			do := benchRequests(hc, tok)
			put := map[string]func(w int) error{
				"one": func(w int) error {
					for i := range each {
						if err := do("PUT", srv.URL+itemPath(fmt.Sprint("k", i), "bench", fmt.Sprint("w", w)), map[string]any{"value": value}); err != nil {
							return err
						}
					}
					return nil
				},
				"batch": func(w int) error {
					puts := make([]any, each)
					for i := range puts {
						puts[i] = map[string]any{"namespace": []string{"bench", fmt.Sprint("w", w)}, "key": fmt.Sprint("k", i), "value": value}
					}
					return do("POST", srv.URL+"/api/v1/memory/batch", map[string]any{"puts": puts})
				},
			}
			pairbench.Rates(b, writers, each, "one", "batch", put)
		})
	}
}
