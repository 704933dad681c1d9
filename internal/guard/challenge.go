package guard

import (
	"net/http"
	"strings"
)

// Realm is the realm every challenge names.
const Realm = "workspaced"

// Challenge is the WWW-Authenticate value of a 401 answering r (RFC 6750
// §3): a request without credentials gets the bare challenge; one whose
// Authorization is not "Bearer TOKEN" gets error="invalid_request"; one
// whose bearer token was refused (unknown, revoked, expired) gets
// error="invalid_token". resourceMetadata, when set, is the URL of the
// protected resource metadata (RFC 9728) a client discovers the
// authorization server from. Every 401 of every listener carries it: the
// guard sets it (Challenging) where the handler set none; a handler that
// knows more (OAuth's insufficient_scope) sets its own.
func Challenge(r *http.Request, resourceMetadata string) string {
	params := []string{`realm="` + Realm + `"`}
	switch a := r.Header.Get("Authorization"); {
	case a == "":
	case !isBearer(a):
		params = append(params, `error="invalid_request"`, `error_description="send the token as 'Authorization: Bearer TOKEN'"`)
	default:
		params = append(params, `error="invalid_token"`, `error_description="the token is unknown, revoked or expired"`)
	}
	if resourceMetadata != "" {
		params = append(params, `resource_metadata="`+resourceMetadata+`"`)
	}
	return "Bearer " + strings.Join(params, ", ")
}

func isBearer(auth string) bool {
	f := strings.Fields(auth)
	return len(f) == 2 && strings.EqualFold(f[0], "bearer")
}

// Challenging is w with the challenge of r (Challenge) set on any 401 it
// answers without one.
func Challenging(w http.ResponseWriter, r *http.Request, resourceMetadata string) http.ResponseWriter {
	if c, ok := w.(*challenger); ok && c.r == r {
		return w
	}
	return &challenger{ResponseWriter: w, r: r, meta: resourceMetadata}
}

// challenger sets the challenge on a 401. It passes flushes on (live
// streams) and unwraps for http.ResponseController.
type challenger struct {
	http.ResponseWriter
	r     *http.Request
	meta  string
	wrote bool
}

func (c *challenger) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
			c.Header().Set("WWW-Authenticate", Challenge(c.r, c.meta))
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challenger) Write(b []byte) (int, error) {
	c.wrote = true
	return c.ResponseWriter.Write(b)
}

func (c *challenger) Flush() {
	c.wrote = true
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

func (c *challenger) Unwrap() http.ResponseWriter { return c.ResponseWriter }
