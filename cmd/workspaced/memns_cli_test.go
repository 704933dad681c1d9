package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestMemoryNamespacesCLI: namespaced memory as a user runs it, on a
// directory and on a sqlite: root — put, get, search with a filter,
// namespaces by prefix, suffix and depth, compare-and-set and delete,
// and the refusals with their exit codes.
func TestMemoryNamespacesCLI(t *testing.T) {
	t.Parallel()
	sq, _ := clitest.NewSQLite(t)
	for name, w := range map[string]*ws{"files": newWS(t), "sqlite": {sq}} {
		t.Run(name, func(t *testing.T) {
			w.T = t
			if out := w.Ok("memory", "put", "--namespace", "users/42", "--key", "prefs", "--value", `{"theme": "dark"}`, "--agent", "po"); out != "put [\"users\",\"42\"] \"prefs\" (version 1)\n" {
				t.Fatalf("put: %q", out)
			}
			w.Ok("memory", "put", "--ns", "users", "--ns", "4/2", "--key", "clé", "--value", `{"score":5}`, "--ttl", "1h")
			w.Ok("memory", "put", "--namespace", `["users","42","prefs"]`, "--key", "k", "--value", `{"score":2}`)
			if out := w.Ok("memory", "get", "--namespace", "users/42", "--key", "prefs", "--compact"); out != "{\"theme\":\"dark\"}\n" {
				t.Fatalf("get: %q", out)
			}
			var it workspace.MemoryItem
			if err := json.Unmarshal([]byte(w.Ok("memory", "get", "--ns", "users", "--ns", "4/2", "--key", "clé", "--json")), &it); err != nil || it.ExpiresAt == nil || it.Version != 1 {
				t.Fatalf("get --json: %+v %v", it, err)
			}
			var items []workspace.MemoryItem
			out := w.Ok("memory", "search", "--namespace", "users", "--filter", `{"score":{"$gte":3}}`, "--json")
			if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 1 || items[0].Key != "clé" {
				t.Fatalf("search: %s %v", out, err)
			}
			if out := w.Ok("memory", "search", "--namespace", "users/4"); out != "no items\n" {
				t.Fatalf("search under a label's prefix: %q", out)
			}
			if out := w.Ok("memory", "search"); !strings.Contains(out, "NAMESPACE") || strings.Count(out, "\n") != 4 {
				t.Fatalf("search everything:\n%s", out)
			}
			if out := w.Ok("memory", "namespaces"); out != "users/4/2\nusers/42\nusers/42/prefs\n" {
				t.Fatalf("namespaces: %q", out)
			}
			if out := w.Ok("memory", "namespaces", "--prefix", "users/*", "--max-depth", "2", "--json"); out != "[\n  [\n    \"users\",\n    \"4/2\"\n  ],\n  [\n    \"users\",\n    \"42\"\n  ]\n]\n" {
				t.Fatalf("namespaces --prefix --max-depth --json: %q", out)
			}
			if out := w.Ok("memory", "namespaces", "--suffix", "prefs"); out != "users/42/prefs\n" {
				t.Fatalf("namespaces --suffix: %q", out)
			}
			w.Fails(4, "version is 1", "memory", "put", "--namespace", "users/42", "--key", "prefs", "--value", `{}`, "--if-version", "3")
			w.Fails(4, "exists already", "memory", "put", "--namespace", "users/42", "--key", "prefs", "--value", `{}`, "--if-absent")
			w.Fails(1, "JSON object", "memory", "put", "--namespace", "users/42", "--key", "prefs", "--value", `[1]`)
			w.Fails(1, "control character", "memory", "put", "--ns", "a\tb", "--key", "k", "--value", `{}`)
			w.Fails(1, "unknown operator", "memory", "search", "--filter", `{"a":{"$regex":"x"}}`)
			w.Fails(2, "not both", "memory", "get", "--namespace", "a", "--scope", "global", "--key", "k")
			w.Fails(2, "whole seconds", "memory", "put", "--namespace", "a", "--key", "k", "--value", `{}`, "--ttl", "1500ms")
			w.Fails(2, "missing --namespace", "memory", "put", "--key", "k", "--value", `{}`)
			w.Fails(4, "version is 1", "memory", "delete", "--namespace", "users/42", "--key", "prefs", "--if-version", "2")
			if out := w.Ok("memory", "delete", "--namespace", "users/42", "--key", "prefs", "--if-version", "1"); out != "deleted [\"users\",\"42\"] \"prefs\"\n" {
				t.Fatalf("delete: %q", out)
			}
			w.Fails(3, "no such item", "memory", "get", "--namespace", "users/42", "--key", "prefs")
		})
	}
}
