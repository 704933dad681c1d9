package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Judging a marker: the rules that accept or refuse a marker and the
// product it names before its record reaches the state machine, the same
// for every store. A store only reads — the marker's bytes, then the
// product the marker names — and says what it could not read; the rules
// are here, pure. In two steps, so that a store learns which product to
// read:
//
//	m := machine.ParseMarker(kind, name, data, limits)
//	j := m.Judge(read(m.Product()))
//	rec := j.Record(seq, takenAt)
//
// or in one, JudgeMarker. A refusal is soft when waiting may cure it (the
// marker or its product may still be being written: a file store lets a
// young marker wait its grace period) and hard when nothing will (a
// marker oversized or nested too deep, a product outside the task or
// unsafe to read, a done marker naming another subtask's output).

// Marker is one marker's bytes judged alone: parsed and checked against
// its schema, or refused with the reason. ParseMarker makes one.
type Marker struct {
	rec  workspace.JournalRecord // Kind, File, Marker and Rejected set
	soft bool
	lim  workspace.LimitSettings
	// amend is the amendment_review setting a plan's record carries
	// ("" for the default).
	amend string
	// product is the output_file Judge needs read ("" for none), of
	// kind pkind and id pid.
	product, pkind, pid string
}

// ProductRead is the product a done marker names, as the store read it:
// its bytes, or Missing, or Err, why it could not be read (an error of
// kind workspace.ErrUnsafe says it can never be: a symlink, a special
// file, oversized, outside the task).
type ProductRead struct {
	Data    []byte
	Missing bool
	Err     error
}

// Judgement is the verdict of the reading rules on one marker and its
// product: taken, or refused with the reason, softly or not.
type Judgement struct {
	rec  workspace.JournalRecord // Seq and TakenAt not set
	soft bool
}

// ParseMarker judges data, the bytes of the marker name of kind
// (workspace.KindClaim or KindDone), alone: within lim's size and depth,
// valid against its kind's schema, and for a done marker an output_file
// naming a product of the task (or none, for a cancellation) that agrees
// with its subtask_id. Zero limits are workspace's defaults. set is the
// workspace's settings: their limits, and the amendment_review a record
// proposing a plan carries.
func ParseMarker(kind, name string, data []byte, set workspace.Settings) Marker {
	lim := set.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = workspace.DefaultMaxFileBytes
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = workspace.DefaultMaxDepth
	}
	m := Marker{rec: workspace.JournalRecord{File: name, Kind: kind}, lim: lim}
	if a := set.Plans.AmendmentReview; a != workspace.AmendReviewChanges {
		m.amend = a
	}
	if len(data) > lim.MaxFileBytes {
		return m.refuse(false, fmt.Sprintf("marker is %d bytes, more than the limit of %d", len(data), lim.MaxFileBytes))
	}
	if err := workspace.CheckDepth(data, lim.MaxDepth); err != nil {
		return m.refuse(false, "marker "+workspace.Reason(err))
	}
	sk := schemas.KindClaim
	if kind == workspace.KindDone {
		sk = schemas.KindDone
	}
	if err := schemas.Validate(sk, data); err != nil {
		// Keep what can be read (the agent) for the record.
		_ = json.Unmarshal(data, &m.rec.Marker)
		return m.refuse(true, fmt.Sprintf("not a valid %s marker: %v", kind, err))
	}
	if err := json.Unmarshal(data, &m.rec.Marker); err != nil {
		return m.refuse(true, fmt.Sprintf("not a valid %s marker: %v", kind, err))
	}
	if err := checkDecoded(kind, m.rec.Marker); err != nil {
		return m.refuse(true, fmt.Sprintf("not a valid %s marker: %v", kind, err))
	}
	if kind != workspace.KindDone {
		return m
	}
	mk := m.rec.Marker
	pkind, pid, err := workspace.ClassifyOutput(mk.OutputFile)
	switch {
	case err != nil:
		return m.refuse(false, err.Error())
	case pkind == workspace.ProductNone && mk.Status != DoneCancelled:
		return m.refuse(false, "done marker names no output_file")
	case pkind == workspace.ProductOutput && mk.SubtaskID != "" && mk.SubtaskID != pid:
		// Finishing one subtask with another's output would leave the
		// second one's output looking finished.
		return m.refuse(false, fmt.Sprintf("done marker names subtask %s, but its output_file %s is subtask %s's", mk.SubtaskID, mk.OutputFile, pid))
	case pkind != workspace.ProductNone:
		m.product, m.pkind, m.pid = mk.OutputFile, pkind, pid
	}
	return m
}

// checkDecoded checks the fields of mk, a marker of kind decoded from
// bytes that matched its schema, against the schema again. Decoding
// matches keys without regard to case, so a key the schema does not know
// ("Subtask_ID") can overwrite one it checked ("subtask_id"); such a
// marker would make a record that does not match the journal's schema.
func checkDecoded(kind string, mk workspace.Marker) error {
	if err := vocab.ValidateID("agent_id", mk.AgentID); err != nil {
		return err
	}
	if mk.SubtaskID != "" || kind == workspace.KindClaim {
		if err := vocab.ValidateID("subtask_id", mk.SubtaskID); err != nil {
			return err
		}
	}
	switch mk.Status {
	case "", DoneCompleted, DoneFailed, DoneCancelled:
	default:
		return fmt.Errorf("status %q is not completed, failed or cancelled", mk.Status)
	}
	return nil
}

func (m Marker) refuse(soft bool, reason string) Marker {
	m.rec.Rejected, m.soft = reason, soft
	return m
}

// Product is the output_file to read and give to Judge, or "" when Judge
// needs no product: a claim, a cancellation naming none, or a marker
// already refused.
func (m Marker) Product() string {
	if m.rec.Rejected != "" {
		return ""
	}
	return m.product
}

// Judge judges m with p, the product m.Product() names as read (ignored
// when it names none): a product missing or unreadable for a reason other
// than ErrUnsafe is a soft refusal, as is one that does not decode
// (workspace.DecodeProduct) unless it is too large or deep. A taken
// subtask output fills in the marker's subtask_id from the output's name
// when the marker left it out.
func (m Marker) Judge(p ProductRead) Judgement {
	j := Judgement{rec: m.rec, soft: m.soft}
	if m.Product() == "" {
		return j
	}
	prefix := "output " + m.product + ": "
	switch {
	case p.Missing:
		return j.refuse(true, prefix+"output file "+m.product+" does not exist")
	case p.Err != nil:
		return j.refuse(!errors.Is(p.Err, workspace.ErrUnsafe), prefix+workspace.Reason(p.Err))
	}
	pr, err := workspace.DecodeProduct(m.product, p.Data, m.lim)
	if err != nil {
		return j.refuse(!errors.Is(err, workspace.ErrUnsafe), prefix+workspace.Reason(err))
	}
	j.rec.Plan, j.rec.Review = pr.Plan, pr.Review
	if pr.Plan != nil {
		j.rec.AmendmentReview = m.amend
	}
	if m.pkind == workspace.ProductOutput && j.rec.Marker.SubtaskID == "" {
		// The output's file name says which subtask it finishes.
		j.rec.Marker.SubtaskID = m.pid
	}
	return j
}

func (j Judgement) refuse(soft bool, reason string) Judgement {
	j.rec.Rejected, j.soft = reason, soft
	return j
}

// Taken reports whether the marker is taken as valid so far (Record may
// still refuse a record that would not match the journal's schema).
func (j Judgement) Taken() bool { return j.rec.Rejected == "" }

// Soft reports whether a refusal may be cured by waiting: the marker or
// its product may still be being written.
func (j Judgement) Soft() bool { return j.rec.Rejected != "" && j.soft }

// Reason says why the marker is refused ("" when taken).
func (j Judgement) Reason() string { return j.rec.Rejected }

// Rejected is the hard refusal, for reason, of the marker name of kind
// that could not be read at all (a store's reading rules: not a regular
// file, say).
func Rejected(kind, name, reason string) Judgement {
	return Judgement{rec: workspace.JournalRecord{File: name, Kind: kind}}.Reject(reason)
}

// Reject is j refused, hard, for reason: for a store that lost the
// marker between judging and taking it.
func (j Judgement) Reject(reason string) Judgement {
	if reason == "" {
		reason = "marker could not be read"
	}
	j.rec.Plan, j.rec.Review, j.rec.AmendmentReview = nil, nil, ""
	return j.refuse(false, reason)
}

// Record is the journal record of the judged marker, taken as seq (from
// 1) at takenAt. A record carrying more than the marker (a plan, a
// review) or a refusal is checked against the journal's schema, and one
// that would not match is a refusal saying why: given seq >= 1 and a
// marker name, a record Record returns always matches the journal schema.
// (A taken marker passed its own schema, which the journal's repeats.)
func (j Judgement) Record(seq int64, takenAt time.Time) workspace.JournalRecord {
	rec := j.rec
	rec.Seq, rec.TakenAt = seq, takenAt.UTC()
	if rec.Plan == nil && rec.Review == nil && rec.Rejected == "" {
		return rec
	}
	data, err := json.Marshal(rec)
	if err == nil {
		err = schemas.Validate(schemas.KindJournal, data)
	}
	if err != nil {
		rec.Plan, rec.Review, rec.AmendmentReview = nil, nil, ""
		rec.Rejected = "record does not match the journal schema: " + err.Error()
	}
	return rec
}

// JudgeMarker is ParseMarker, Judge and Record in one: the journal record
// of the marker name of kind with bytes data, taken as seq at takenAt,
// its product read through read (called only when the marker names one),
// and whether a refusal is soft.
func JudgeMarker(kind, name string, data []byte, set workspace.Settings, read func(outputFile string) ProductRead, seq int64, takenAt time.Time) (workspace.JournalRecord, bool) {
	m := ParseMarker(kind, name, data, set)
	var p ProductRead
	if f := m.Product(); f != "" {
		p = read(f)
	}
	j := m.Judge(p)
	rec := j.Record(seq, takenAt)
	return rec, rec.Rejected != "" && j.Soft() && rec.Rejected == j.Reason()
}
