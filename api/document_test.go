package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// openAPI is the part of the document the tests read.
type openAPI struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas    map[string]json.RawMessage `json:"schemas"`
		Responses  map[string]json.RawMessage `json:"responses"`
		Parameters map[string]json.RawMessage `json:"parameters"`
	} `json:"components"`
}

func readDocument(t *testing.T) openAPI {
	t.Helper()
	var doc openAPI
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	return doc
}

// TestDocumentDescribesEveryRoute holds the document and the handler to
// each other: every route served is described, and every route described
// is served.
func TestDocumentDescribesEveryRoute(t *testing.T) {
	doc := readDocument(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi is %q, want 3.1.0", doc.OpenAPI)
	}
	var served, described []string
	for _, rt := range routes {
		served = append(served, rt.method+" "+rt.pattern)
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			described = append(described, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(served)
	slices.Sort(described)
	for _, r := range served {
		if !slices.Contains(described, r) {
			t.Errorf("%s is served but not in openapi.json", r)
		}
	}
	for _, r := range described {
		if !slices.Contains(served, r) {
			t.Errorf("%s is in openapi.json but not served", r)
		}
	}
}

// TestEveryRouteIsRouted sends a request to every route of the table and
// checks the handler's mux takes it to that route, not to the fallback.
func TestEveryRouteIsRouted(t *testing.T) {
	h := New(Config{Store: newTreeStore(t)})
	for _, rt := range routes {
		path := strings.NewReplacer("{task}", "t1", "{thread}", "t1", "{subtask}", "s1", "{review}", "r1", "{agent}", "a1", "{key}", "k%2F1").Replace(rt.pattern)
		r := httptest.NewRequest(rt.method, path, nil)
		_, pattern := h.mux.Handler(r)
		if pattern != rt.method+" "+rt.pattern {
			t.Errorf("%s %s goes to %q, want %q", rt.method, path, pattern, rt.method+" "+rt.pattern)
		}
	}
}

// TestDocumentReferencesResolve checks every $ref of the document names
// a component that is there.
func TestDocumentReferencesResolve(t *testing.T) {
	doc := readDocument(t)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "$ref" {
					ref, _ := e.(string)
					parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
					if len(parts) != 2 {
						t.Errorf("$ref %q is not a component", ref)
						continue
					}
					var set map[string]json.RawMessage
					switch parts[0] {
					case "schemas":
						set = doc.Components.Schemas
					case "responses":
						set = doc.Components.Responses
					case "parameters":
						set = doc.Components.Parameters
					}
					if _, ok := set[parts[1]]; !ok && parts[0] != "headers" {
						t.Errorf("$ref %q names nothing", ref)
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var all any
	if err := json.Unmarshal(Document, &all); err != nil {
		t.Fatal(err)
	}
	walk(all)
}

// TestDocumentIsServed checks GET /api/v1/openapi.json answers the
// document, without a token.
func TestDocumentIsServed(t *testing.T) {
	h := New(Config{Store: newTreeStore(t)})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != string(Document) {
		t.Fatalf("GET openapi.json: %d, %d bytes", rec.Code, rec.Body.Len())
	}
}

// TestDocumentNamesEveryKind: the kinds a problem may carry are the ones
// the document lists.
func TestDocumentNamesEveryKind(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Problem struct {
					Properties struct {
						Kind struct {
							Enum []string `json:"enum"`
						} `json:"kind"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatal(err)
	}
	listed := doc.Components.Schemas.Problem.Properties.Kind.Enum
	for _, k := range []string{kindInvalid, kindNotFound, kindConflict, kindVersionConflict, kindLocked, kindUnsafe, kindNotServing, kindNoVerdict,
		kindUnauthorized, kindForbidden, kindTooLarge, kindMediaType, kindMethod, kindNotImplemented, kindInternal, kindTooMany, kindUnavailable} {
		if !slices.Contains(listed, k) {
			t.Errorf("kind %q is not in the document's Problem.kind", k)
		}
	}
}
