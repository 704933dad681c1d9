package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/pairbench"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
)

// BenchmarkRememberedGrant: on PostgreSQL, a token's requests served on
// its remembered grant (one round trip to the database) against the same
// requests looking the token up (two), through two listeners over one
// store, alternated within each round (pairbench): a get and a put one
// after another (items a second are requests a second), and 16 writers
// at once each posting a batch of 16 puts of 1 KiB. "ratio" is
// remembered ÷ looked up. Run it with
//
//	go test -run '^$' -bench RememberedGrant -benchtime 20x ./api/
func BenchmarkRememberedGrant(b *testing.B) {
	st := openKind(b, service.PostgreSQL)
	keeper, err := service.Tokens("bench", st)
	if err != nil {
		b.Fatal(err)
	}
	tok, _, err := tokens.Add(b.Context(), keeper, tokens.Grant{Agent: "bench", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		b.Fatal(err)
	}
	base := map[string]string{
		"remembered": server(b, st, &httpauth.Gate{Keeper: keeper}).URL,
		"lookup":     server(b, st, &httpauth.Gate{Keeper: lookupOnly{keeper}}).URL,
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	do := benchRequests(hc, tok)
	value := map[string]any{"text": strings.Repeat("x", 1000)}
	if err := do("PUT", base["lookup"]+itemPath("k", "bench"), map[string]any{"value": value}); err != nil {
		b.Fatal(err)
	}
	const n = 200
	ways := func(req func(url string, w int) error, each int) map[string]func(int) error {
		m := map[string]func(int) error{}
		for how, url := range base {
			m[how] = func(w int) error {
				for range each {
					if err := req(url, w); err != nil {
						return err
					}
				}
				return nil
			}
		}
		return m
	}
	b.Run("get", func(b *testing.B) {
		pairbench.Rates(b, 1, n, "lookup", "remembered", ways(func(url string, _ int) error { return do("GET", url+itemPath("k", "bench"), nil) }, n))
	})
	b.Run("put", func(b *testing.B) {
		pairbench.Rates(b, 1, n, "lookup", "remembered", ways(func(url string, _ int) error {
			return do("PUT", url+itemPath("k", "bench"), map[string]any{"value": value})
		}, n))
	})
	b.Run("batch16x16", func(b *testing.B) {
		const writers, each = 16, 16
		pairbench.Rates(b, writers, each, "lookup", "remembered", ways(func(url string, w int) error {
			puts := make([]any, each)
			for i := range puts {
				puts[i] = map[string]any{"namespace": []string{"bench", fmt.Sprint("w", w)}, "key": fmt.Sprint("k", i), "value": value}
			}
			return do("POST", url+"/api/v1/memory/batch", map[string]any{"puts": puts})
		}, 1))
	})
}

// benchRequests is a benchmark's sender of requests with token: the
// JSON of body (none when nil); an answer other than 200, or a batch
// result refused by its compare-and-set, is an error.
func benchRequests(hc *http.Client, tok string) func(method, url string, body any) error {
	return func(method, url string, body any) error {
		var rd io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		}
		req, _ := http.NewRequest(method, url, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || bytes.Contains(out, []byte(`"status":412`)) {
			return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, out)
		}
		return nil
	}
}
