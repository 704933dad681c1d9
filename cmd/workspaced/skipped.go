package main

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// displayName is a file name as printed for people: as it is when it is
// printable UTF-8, Go-quoted otherwise, so that a name an agent chose
// (with a newline, an escape sequence, bytes that are not UTF-8) can
// neither forge a line of output nor drive the terminal.
func displayName(name string) string {
	if !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) && r != ' ' {
			return strconv.Quote(name)
		}
	}
	return name
}
