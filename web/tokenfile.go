package web

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// MinTokenBits is the least strength of the panel's token: a guess per
// request must not find it.
const MinTokenBits = 128

// makeToken says how to make a good token file.
const makeToken = "make one: (umask 077; openssl rand -hex 32 > FILE), or chmod 600 FILE if it is already good"

// ReadTokenFile reads the panel's token from path, refusing a file that
// is not regular, that others than its owner may read or change (mode
// 0600 or stricter is wanted), that is empty or larger than 4 KiB, or
// whose token is weaker than MinTokenBits (TokenBits). Surrounding white
// space is dropped.
func ReadTokenFile(path string) (string, error) {
	op := "read the token file " + path
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	if !fi.Mode().IsRegular() {
		return "", &workspace.Error{Kind: workspace.ErrUnsafe, Op: op, Msg: "not a regular file", Hint: makeToken}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", &workspace.Error{Kind: workspace.ErrUnsafe, Op: op,
			Msg:  fmt.Sprintf("has mode %04o: others than its owner may read or change the panel's secret", fi.Mode().Perm()),
			Hint: "chmod 600 " + path}
	}
	data, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	if len(data) > 4096 {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "more than 4 KiB: not a token", Hint: makeToken}
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: op, Msg: "it is empty", Hint: makeToken}
	}
	if bits := TokenBits(tok); bits < MinTokenBits {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: op,
			Msg:  fmt.Sprintf("the token holds at most %d bits of randomness, fewer than %d", bits, MinTokenBits),
			Hint: makeToken}
	}
	return tok, nil
}

// TokenBits bounds from above the randomness of a token by its length and
// the smallest alphabet its characters come from: 4 bits a character of
// hexadecimal, 6 of base64, 6.5 of any other printable ASCII, 1 of
// anything a character repeated over the whole token. A person's
// password counts for more than it holds; a secret of openssl rand or of
// 'workspaced token add' counts for what it is.
func TokenBits(tok string) int {
	hexOnly, b64 := true, true
	distinct := map[rune]bool{}
	for _, c := range tok {
		distinct[c] = true
		isHex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
		isB64 := isHex || c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
		hexOnly = hexOnly && isHex
		b64 = b64 && isB64
	}
	per := 6.5
	switch {
	case len(distinct) < 2:
		per = 0
	case hexOnly:
		per = 4
	case b64:
		per = 6
	}
	return int(math.Floor(per * float64(len([]rune(tok)))))
}
