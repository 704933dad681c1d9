package oauth

import (
	"strings"
)

// Error codes of a Bearer challenge (RFC 6750 §3.1).
const (
	ErrorInvalidToken      = "invalid_token"
	ErrorInsufficientScope = "insufficient_scope"
)

// Challenge is the WWW-Authenticate value of a refusal in OAuth mode: a
// Bearer challenge naming the Protected Resource Metadata (RFC 9728 §5.1)
// and, when a token was refused, the error code and its description;
// for insufficient_scope, the scopes that would do. The description is
// cut to the characters a quoted parameter may hold.
func (v *Verifier) Challenge(code, description string) string {
	params := []string{`resource_metadata="` + v.c.MetadataURL() + `"`}
	if code != "" {
		params = append(params, `error="`+code+`"`)
	}
	if d := clean(description); d != "" {
		params = append(params, `error_description="`+d+`"`)
	}
	if code == ErrorInsufficientScope {
		params = append(params, `scope="`+strings.Join(v.c.ScopesSupported(), " ")+`"`)
	}
	return "Bearer " + strings.Join(params, ", ")
}

// clean keeps what RFC 6750 §3 lets error_description hold: printable
// ASCII without '"' and '\', at most 200 bytes.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 200 {
			break
		}
		if r >= 0x20 && r <= 0x7e && r != '"' && r != '\\' {
			b.WriteRune(r)
		} else if r == '"' {
			b.WriteByte('\'')
		}
	}
	return b.String()
}
