package sqlstore

import (
	"unsafe"
)

// A state stored as parts (Dialect.StatePartsFrom): the document is the
// encoder's pieces (statecheck.Encoder.EncodeParts), each block of
// entries a part of its own and each run of the shell's pieces between
// them one part. A state row lists its parts' ids in order; a commit that
// follows the committer's own row inserts only the parts whose bytes
// changed (the shell and the blocks its markers changed) and lists the
// others by the ids that row has: at 10,000 subtasks a few KiB a commit
// instead of the 504 KiB document.

// StatePart is one part of a state document a commit writes: ID is the
// part stored already that it reuses, or 0 for one to insert, Body, whose
// id the driver sets once inserted. Body's bytes are the encoder's: the
// driver sends them within WriteCommit and keeps no reference to them.
type StatePart struct {
	ID   int64
	Body string
}

// keptPart is what a committer keeps of a part of the row it wrote, to
// know it again in its next document: a block by its address (the
// encoder hands out an unchanged block as the same slice, and the
// reference kept here keeps that address from being reused), a run of
// the shell's pieces by a copy of its bytes (nil when larger than
// maxKeptShell: never matched).
type keptPart struct {
	data  []byte
	block bool
	id    int64
}

// maxKeptShell is the largest run of the shell's pieces a committer
// keeps a copy of: the shell is a few hundred bytes; a document encoded
// whole (one piece) is not kept.
const maxKeptShell = 16 << 10

// splitParts makes the parts of a document from the encoder's pieces
// (blocks[i]: pieces[i] is a block), reusing the parts of the row the
// committer wrote last when the state row is still that one (follows):
// replaced are then the ids of that row's parts the new row does not
// hold. kept is what the committer keeps of the new parts, their ids set
// by keepParts once written.
func (c *commitTx) splitParts(pieces [][]byte, blocks []bool) (parts []StatePart, kept []keptPart, follows bool, replaced []int64) {
	follows = c.Mine && c.last.parts != nil
	var (
		prevBlocks map[*byte]keptPart
		prevShell  []keptPart
		reused     map[int64]bool
	)
	if follows {
		prevBlocks = make(map[*byte]keptPart, len(c.last.parts))
		reused = make(map[int64]bool, len(c.last.parts))
		for _, p := range c.last.parts {
			if p.block {
				prevBlocks[unsafe.SliceData(p.data)] = p
			} else {
				prevShell = append(prevShell, p)
			}
		}
	}
	parts, kept = make([]StatePart, 0, len(pieces)), make([]keptPart, 0, len(pieces))
	shells := 0
	for i := 0; i < len(pieces); {
		if blocks[i] {
			b := pieces[i]
			k := keptPart{data: b, block: true}
			if p, ok := prevBlocks[unsafe.SliceData(b)]; ok && len(p.data) == len(b) {
				k.id = p.id
				reused[p.id] = true
			}
			parts, kept = append(parts, StatePart{ID: k.id, Body: unsafe.String(unsafe.SliceData(b), len(b))}), append(kept, k)
			i++
			continue
		}
		j := i + 1
		for j < len(pieces) && !blocks[j] {
			j++
		}
		var data []byte
		if j == i+1 {
			data = pieces[i]
		} else {
			for _, p := range pieces[i:j] {
				data = append(data, p...)
			}
		}
		k := keptPart{}
		if len(data) <= maxKeptShell {
			k.data = append([]byte(nil), data...)
		}
		if shells < len(prevShell) && prevShell[shells].data != nil && string(prevShell[shells].data) == string(data) {
			k.id = prevShell[shells].id
			reused[k.id] = true
		}
		shells++
		parts, kept = append(parts, StatePart{ID: k.id, Body: unsafe.String(unsafe.SliceData(data), len(data))}), append(kept, k)
		i = j
	}
	for _, p := range c.last.parts {
		if follows && !reused[p.id] {
			replaced = append(replaced, p.id)
		}
	}
	return parts, kept, follows, replaced
}
