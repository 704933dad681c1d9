package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Long-term memory under namespaces: items keyed by a namespace of labels
// (["users", "42", "prefs"]) and a key, each a JSON object with a version
// and an optional expiry. Every store keeps them (MemoryStore); what is
// the same on every store — the rules of names, the order, prefixes,
// wildcards, the filter of a search, what an expired item is — is written
// here once, as pure functions over values.

// Limits of namespaces and of their listings.
const (
	MaxNamespaceDepth  = 16   // labels in a namespace
	MaxLabelBytes      = 128  // bytes in a label
	DefaultSearchLimit = 10   // items a search returns when no limit is given
	DefaultNSLimit     = 100  // namespaces a listing returns when no limit is given
	MaxMemoryLimit     = 1000 // the largest limit of a search or a listing
	// MaxTTLSeconds bounds an item's time to live (ten years).
	MaxTTLSeconds = 10 * 365 * 24 * 3600
	// Wildcard is the label of a listing's prefix or suffix that matches
	// any one label.
	Wildcard = "*"
)

// Where the tree keeps namespaced memory: a directory per namespace under
// MemoryDir (Namespace.Dir), NamespaceFile in it naming the namespace,
// each item <key>.json (the key encoded as an entry's, EncodeKey), and
// the memory events in MemoryEventsFile.
const (
	MemoryDir        = "memory/namespaces"
	MemoryEventsFile = MemoryDir + "/events.log"
	NamespaceFile    = ".namespace.json"
)

// Namespace is a list of labels. Namespaces are compared label by label,
// never as a joined string: ["a","b"] is a prefix of ["a","b","c"] and
// never of ["a","bc"].
type Namespace []string

// MemoryItem is one item of namespaced memory. Times are the store's
// clock, UTC, to the millisecond; ExpiresAt is nil when the item has no
// time to live.
type MemoryItem struct {
	Namespace Namespace       `json:"namespace"`
	Key       string          `json:"key"`
	Version   int             `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	ExpiresAt *time.Time      `json:"expires_at"`
	Value     json.RawMessage `json:"value"`
}

// Live says whether the item is visible at now: an item past its expiry
// is gone for every read at once, though a retention run removes it
// later.
func (it MemoryItem) Live(now time.Time) bool {
	return it.ExpiresAt == nil || now.Before(*it.ExpiresAt)
}

// MemoryPutRequest creates or replaces an item. TTLSeconds > 0 gives it an
// expiry that long after the write (0: none; a put sets the expiry anew
// either way). IfVersion > 0 makes the put a compare-and-set on the
// current version; IfAbsent makes it create only.
type MemoryPutRequest struct {
	Namespace  Namespace
	Key        string
	Value      json.RawMessage
	TTLSeconds int
	IfVersion  int
	IfAbsent   bool
	Agent      string
}

// MemoryDeleteRequest removes an item, when IfVersion > 0 only at that
// version.
type MemoryDeleteRequest struct {
	Namespace Namespace
	Key       string
	IfVersion int
	Agent     string
}

// MemorySearchRequest lists the items whose namespace starts with Prefix
// (every item when empty) and whose value Filter matches, in namespace
// then key order, Limit of them (DefaultSearchLimit when 0) after
// skipping Offset.
type MemorySearchRequest struct {
	Prefix Namespace
	Filter MemoryFilter
	Limit  int
	Offset int
}

// NamespaceQuery lists the namespaces that hold live items: those that
// start with Prefix and end with Suffix (Wildcard labels match any
// label), cut to MaxDepth labels when > 0 and deduplicated, sorted, Limit
// of them (DefaultNSLimit when 0) after skipping Offset.
type NamespaceQuery struct {
	Prefix, Suffix []string
	MaxDepth       int
	Limit, Offset  int
}

// VersionError is the cause of a compare-and-set refused with
// ErrConflict: the version the item has now (0 when there is none).
type VersionError struct {
	Current int
}

func (e *VersionError) Error() string {
	if e.Current == 0 {
		return "no such item"
	}
	return "version is " + strconv.Itoa(e.Current)
}

// ValidateLabel checks one label of a namespace: 1–128 bytes of valid
// UTF-8 without control characters (NUL among them).
func ValidateLabel(label string) error {
	op := "namespace label"
	switch {
	case label == "":
		return Invalidf(op, "give labels of 1–128 bytes", "empty label")
	case len(label) > MaxLabelBytes:
		return Invalidf(op, "labels are at most 128 bytes", "label is %d bytes", len(label))
	case !utf8.ValidString(label):
		return Invalidf(op, "labels must be valid UTF-8", "label %q is not valid UTF-8", label)
	}
	for _, r := range label {
		if unicode.IsControl(r) {
			return Invalidf(op, "remove control characters (newlines, tabs, NUL…) from the label", "label %q contains a control character", label)
		}
	}
	return nil
}

// ValidateNamespace checks a namespace: 1–16 valid labels.
func ValidateNamespace(ns Namespace) error {
	if len(ns) == 0 {
		return Invalidf("namespace", `give a namespace of 1–16 labels, e.g. ["users","42"]`, "empty namespace")
	}
	return validateLabels("namespace", ns)
}

func validateLabels(what string, labels []string) error {
	if len(labels) > MaxNamespaceDepth {
		return Invalidf(what, "a namespace has at most 16 labels", "%d labels", len(labels))
	}
	for _, l := range labels {
		if err := ValidateLabel(l); err != nil {
			return err
		}
	}
	return nil
}

// Sortable encodes ns as a string whose byte order is the namespaces'
// label-by-label order and whose prefixes are the namespace's prefixes:
// each label followed by \x01, a byte no label holds and that sorts below
// every byte a label may hold. A database keys and orders rows by it.
func (ns Namespace) Sortable() string {
	var b strings.Builder
	for _, l := range ns {
		b.WriteString(l)
		b.WriteByte(1)
	}
	return b.String()
}

// ParseSortable reverses Sortable.
func ParseSortable(s string) (Namespace, error) {
	if s == "" || s[len(s)-1] != 1 {
		return nil, fmt.Errorf("namespace key %q: not an encoded namespace", s)
	}
	ns := Namespace(strings.Split(s[:len(s)-1], "\x01"))
	if err := ValidateNamespace(ns); err != nil {
		return nil, fmt.Errorf("namespace key %q: %w", s, err)
	}
	return ns, nil
}

// Dir is the namespace's directory in the tree, from the root: under
// MemoryDir, the first 32 hex digits of the SHA-256 of Sortable, so that
// any namespace fits one file name.
func (ns Namespace) Dir() string {
	sum := sha256.Sum256([]byte(ns.Sortable()))
	return MemoryDir + "/" + hex.EncodeToString(sum[:16])
}

// NamespaceDoc is the content of a namespace directory's NamespaceFile.
type NamespaceDoc struct {
	Namespace Namespace `json:"namespace"`
}

// String is the namespace as a JSON array, how messages and events name
// it.
func (ns Namespace) String() string {
	if ns == nil {
		return "null"
	}
	n := 2
	for _, l := range ns {
		if !PlainJSON(l) {
			b, _ := json.Marshal([]string(ns))
			return string(b)
		}
		n += len(l) + 3
	}
	// Labels json.Marshal writes as they are: the same bytes, by hand.
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, l := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), l...), '"')
	}
	return string(append(b, ']'))
}

// CompareNamespaces orders namespaces label by label, each by bytes; a
// namespace sorts before the longer ones it is a prefix of.
func CompareNamespaces(a, b Namespace) int {
	return slices.Compare(a, b)
}

// HasPrefix says whether ns starts with prefix, label by label (every
// namespace starts with the empty prefix).
func (ns Namespace) HasPrefix(prefix []string) bool {
	return len(prefix) <= len(ns) && slices.Equal(ns[:len(prefix)], prefix)
}

// MatchNamespace says whether ns starts with prefix and ends with suffix,
// label by label, where a Wildcard label of either matches any one
// label.
func MatchNamespace(ns Namespace, prefix, suffix []string) bool {
	if len(prefix) > len(ns) || len(suffix) > len(ns) {
		return false
	}
	match := func(pattern, labels []string) bool {
		for i, p := range pattern {
			if p != Wildcard && p != labels[i] {
				return false
			}
		}
		return true
	}
	return match(prefix, ns[:len(prefix)]) && match(suffix, ns[len(ns)-len(suffix):])
}

// CheckMemoryPut checks a put: namespace, key, agent, value (a JSON
// object within lim), the time to live and the compare-and-set.
func CheckMemoryPut(req MemoryPutRequest, lim LimitSettings) error {
	if err := checkItemName(req.Namespace, req.Key, req.Agent); err != nil {
		return err
	}
	if err := CheckMemoryValue(req.Value, lim); err != nil {
		return err
	}
	return checkPutOptions(req)
}

// checkPutOptions checks a put's time to live and compare-and-set.
func checkPutOptions(req MemoryPutRequest) error {
	switch {
	case req.TTLSeconds < 0 || req.TTLSeconds > MaxTTLSeconds:
		return FieldErr(ErrInvalid, "ttl", FieldTTL, "give a time to live of 1 second to 10 years, or none", "time to live of %d seconds", req.TTLSeconds)
	case req.IfVersion < 0:
		return FieldErr(ErrInvalid, "if_version", FieldIfVersion, "give the version a get returned", "version %d", req.IfVersion)
	case req.IfVersion > 0 && req.IfAbsent:
		return FieldErr(ErrInvalid, "put", FieldIfVersion, "ask for one of them: a version to replace, or create only", "both a version to replace and create only")
	}
	return nil
}

// CheckMemoryDelete checks a delete's namespace, key, agent and version.
func CheckMemoryDelete(req MemoryDeleteRequest) error {
	if err := checkItemName(req.Namespace, req.Key, req.Agent); err != nil {
		return err
	}
	if req.IfVersion < 0 {
		return FieldErr(ErrInvalid, "if_version", FieldIfVersion, "give the version a get returned", "version %d", req.IfVersion)
	}
	return nil
}

// CheckMemoryGet checks a get's namespace and key.
func CheckMemoryGet(ns Namespace, key string) error {
	if err := ValidateNamespace(ns); err != nil {
		return err
	}
	return ValidateKey(key)
}

func checkItemName(ns Namespace, key, agent string) error {
	if err := CheckMemoryGet(ns, key); err != nil {
		return err
	}
	return ValidateID("agent", agent)
}

// CheckMemoryValue checks an item's value: a JSON object within the
// value size and depth limits. A good value costs one pass, which
// allocates nothing; a value it refuses is read again by the checks that
// say why.
func CheckMemoryValue(v json.RawMessage, lim LimitSettings) error {
	if len(v) == 0 {
		return FieldErr(ErrInvalid, "value", FieldValue, `give a JSON object, e.g. {"theme":"dark"}`, "missing value")
	}
	if len(v) > lim.ValueMaxBytes {
		return FieldErr(ErrInvalid, "value", FieldValue, "store large data as several items",
			"value is %d bytes, over the %d-byte limit", len(v), lim.ValueMaxBytes)
	}
	if CheckDepth(v, lim.MaxDepth) == nil && IsObject(v) {
		return nil
	}
	raw, err := ParseValue(v, lim.MaxDepth)
	if err != nil {
		if HintOf(err) == "" {
			return FieldErr(ErrInvalid, "value", FieldValue, `give one JSON object, e.g. {"theme":"dark"}`, "%s", Reason(err))
		}
		return err
	}
	if raw[0] != '{' {
		return FieldErr(ErrInvalid, "value", FieldValue, `wrap it in an object, e.g. {"value": ...}`, "a memory item's value is a JSON object")
	}
	// Text after the value that ParseValue's decoder does not see
	// ("{}}"), which the stores' compaction refused after the checks.
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		return FieldErr(ErrInvalid, "value", FieldValue, "give a JSON object", "%v", err)
	}
	return nil
}

// CheckSearch checks a search and returns it with its limit filled in.
func CheckSearch(req MemorySearchRequest) (MemorySearchRequest, error) {
	if err := validateLabels("namespace prefix", req.Prefix); err != nil {
		return req, err
	}
	var err error
	req.Limit, err = checkPage(req.Limit, req.Offset, DefaultSearchLimit)
	return req, err
}

// CheckNamespaceQuery checks a listing and returns it with its limit
// filled in.
func CheckNamespaceQuery(q NamespaceQuery) (NamespaceQuery, error) {
	if err := validateLabels("namespace prefix", q.Prefix); err != nil {
		return q, err
	}
	if err := validateLabels("namespace suffix", q.Suffix); err != nil {
		return q, err
	}
	if q.MaxDepth < 0 || q.MaxDepth > MaxNamespaceDepth {
		return q, Invalidf("max_depth", "give a depth of 1–16 labels, or none", "depth %d", q.MaxDepth)
	}
	var err error
	q.Limit, err = checkPage(q.Limit, q.Offset, DefaultNSLimit)
	return q, err
}

func checkPage(limit, offset, def int) (int, error) {
	switch {
	case limit < 0 || limit > MaxMemoryLimit:
		return 0, Invalidf("limit", "give a limit of 1–1000", "limit %d", limit)
	case offset < 0:
		return 0, Invalidf("offset", "give an offset of 0 or more", "offset %d", offset)
	case limit == 0:
		return def, nil
	}
	return limit, nil
}

// ListNamespaces is the listing q makes of the namespaces that hold live
// items (in any order, repeats allowed): those that match, each cut to
// MaxDepth, without repeats, sorted, paged. q is checked
// (CheckNamespaceQuery).
func ListNamespaces(all []Namespace, q NamespaceQuery) []Namespace {
	var out []Namespace
	for _, ns := range all {
		if !MatchNamespace(ns, q.Prefix, q.Suffix) {
			continue
		}
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		out = append(out, ns)
	}
	slices.SortFunc(out, CompareNamespaces)
	out = slices.CompactFunc(out, func(a, b Namespace) bool { return slices.Equal(a, b) })
	return Page(out, q.Offset, q.Limit)
}

// Page is the part of a sorted list a limit and an offset select; never
// nil.
func Page[T any](all []T, offset, limit int) []T {
	if offset >= len(all) {
		return []T{}
	}
	all = all[offset:]
	if limit < len(all) {
		all = all[:limit]
	}
	return slices.Clip(all)
}

// MemoryEvent is the event of a put (memory_stored, with the new
// version) or a delete (memory_deleted, version 0) of an item: the
// namespace and key, never the value. Memory events have no task.
func MemoryEvent(verb string, ns Namespace, key, agent string, version int, t time.Time) Event {
	attrs := map[string]string{"namespace": ns.String(), "key": key, "agent": agent}
	if version > 0 {
		attrs["version"] = strconv.Itoa(version)
	}
	return Event{Time: t, Name: "memory_" + verb, Attrs: attrs}
}

// ExpiresAt is the expiry a put with ttl seconds gives at t (nil for
// none).
func ExpiresAt(t time.Time, ttl int) *time.Time {
	if ttl <= 0 {
		return nil
	}
	e := t.Add(time.Duration(ttl) * time.Second)
	return &e
}

// PutConflict is the ErrConflict of a put or delete (op) of key refused
// by its compare-and-set: current is the version the item has (0: none).
func PutConflict(op string, ns Namespace, key string, current int) error {
	hint := "read it again (get) and retry with the current version"
	if current > 0 {
		hint = "it exists already: read it (get), or put with its version to replace it"
	}
	return &Error{Kind: ErrConflict, Op: fmt.Sprintf("%s memory %s %q", op, ns, key), Err: &VersionError{Current: current}, Hint: hint}
}

// NoSuchItem is the ErrNotFound of a get or delete (op) of a missing or
// expired item.
func NoSuchItem(op string, ns Namespace, key string) error {
	return NotFoundf(fmt.Sprintf("%s memory %s %q", op, ns, key), "search the namespace to see which keys exist", "no such item")
}

// ApplyPut is what a put makes of the current item (nil when there is
// none or it has expired at t): the item to write, or the put's
// conflict. req is checked (CheckMemoryPut).
func ApplyPut(cur *MemoryItem, req MemoryPutRequest, t time.Time) (MemoryItem, error) {
	if cur != nil && !cur.Live(t) {
		cur = nil
	}
	version := 0
	if cur != nil {
		version = cur.Version
	}
	if (req.IfAbsent && cur != nil) || (req.IfVersion > 0 && version != req.IfVersion) {
		return MemoryItem{}, PutConflict("put", req.Namespace, req.Key, version)
	}
	var value bytes.Buffer
	if err := json.Compact(&value, req.Value); err != nil {
		return MemoryItem{}, FieldErr(ErrInvalid, "value", FieldValue, "give a JSON object", "%v", err)
	}
	it := MemoryItem{Namespace: req.Namespace, Key: req.Key, Version: version + 1, CreatedAt: t, UpdatedAt: t,
		ExpiresAt: ExpiresAt(t, req.TTLSeconds), Value: value.Bytes()}
	if cur != nil {
		it.CreatedAt = cur.CreatedAt
	}
	return it, nil
}

// ApplyDelete judges a delete of the current item (nil when none): a
// missing or expired item is ErrNotFound, a version that does not match
// ErrConflict.
func ApplyDelete(cur *MemoryItem, req MemoryDeleteRequest, t time.Time) error {
	if cur == nil || !cur.Live(t) {
		return NoSuchItem("delete", req.Namespace, req.Key)
	}
	if req.IfVersion > 0 && cur.Version != req.IfVersion {
		return PutConflict("delete", req.Namespace, req.Key, cur.Version)
	}
	return nil
}
