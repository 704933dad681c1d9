package statecheck

// Edits: a store that holds the document the encoder made last can be
// brought to the next one by replacing the pieces that changed, instead
// of being sent the whole document again (PostgreSQL's overlay, at 10,000
// subtasks a few KiB a commit instead of 504 KiB).

// Edit replaces Len bytes of a document, starting after its first At,
// by Text.
type Edit struct {
	At, Len int
	Text    []byte
}

// piece is what the encoder remembers of one piece of the document it
// made last: its length, and, for a piece that is never written again
// (a joined block of entries, a section's end), the piece itself, by
// which the next document's piece is known to be the same.
type piece struct {
	fixed []byte
	bytes int
}

// noteParts remembers the pieces of the document just made, the last
// one's kept as the one before. fixed[i] says parts[i] is never written
// again.
func (e *Encoder) noteParts(parts [][]byte, fixed []bool) {
	e.before, e.pieces = e.pieces, e.before[:0]
	for i, p := range parts {
		pc := piece{bytes: len(p)}
		if fixed[i] {
			pc.fixed = p
		}
		e.pieces = append(e.pieces, pc)
	}
}

// Joined is the document EncodeParts made last, in one slice, the
// encoder's (as Encode's).
func (e *Encoder) Joined() []byte {
	if len(e.parts) == 1 {
		return e.parts[0]
	}
	size := 0
	for _, p := range e.parts {
		size += len(p)
	}
	return e.join(e.parts, size)
}

// samePiece: a and b are the same bytes, never written again.
func samePiece(a, b piece) bool {
	return a.fixed != nil && b.fixed != nil && a.bytes == b.bytes && a.bytes > 0 && &a.fixed[0] == &b.fixed[0]
}

// Edits are the edits that turn the document the encoder made before the
// last one (prevBytes long) into the last one, in the order of the
// document, none overlapping another: the pieces that changed, each
// replacing the piece it stands for, with neighbours joined. ok is false
// when the encoder knows no document before the last (new, or Reset
// since), or when more than max edits or more than half the document
// would be sent (send it whole). The edits are valid for the document
// made before the last only: a store must apply them to exactly that one.
func (e *Encoder) Edits(max int) (edits []Edit, prevBytes int, ok bool) {
	before, now, parts := e.before, e.pieces, e.parts
	if !e.hadBefore || len(before) == 0 || len(now) == 0 || len(now) != len(parts) {
		return nil, 0, false
	}
	size, sent := 0, 0
	for _, p := range now {
		size += p.bytes
	}
	for _, p := range before {
		prevBytes += p.bytes
	}
	var texts [][][]byte // each edit's pieces
	add := func(at, n int, ps ...[]byte) {
		for _, p := range ps {
			sent += len(p)
		}
		if k := len(edits) - 1; k >= 0 && edits[k].At+edits[k].Len == at {
			edits[k].Len += n
			texts[k] = append(texts[k], ps...)
			return
		}
		edits = append(edits, Edit{At: at, Len: n})
		texts = append(texts, append([][]byte(nil), ps...))
	}
	at, i := 0, 0
	// Piece by piece while both have more than one left; the last of
	// either stands with all the other's rest.
	for ; i < len(before)-1 && i < len(now)-1; i++ {
		if !samePiece(before[i], now[i]) {
			add(at, before[i].bytes, parts[i])
		}
		at += before[i].bytes
	}
	if !(len(before)-i == 1 && len(now)-i == 1 && samePiece(before[i], now[i])) {
		n := 0
		for _, p := range before[i:] {
			n += p.bytes
		}
		add(at, n, parts[i:]...)
	}
	if len(edits) > max || sent > size/2 {
		return nil, 0, false
	}
	for k := range edits {
		n := 0
		for _, p := range texts[k] {
			n += len(p)
		}
		b := make([]byte, 0, n)
		for _, p := range texts[k] {
			b = append(b, p...)
		}
		edits[k].Text = b
	}
	return edits, prevBytes, true
}
