package workspace

// BadLines counts the lines of one task's events.log that do not parse,
// or says why the log was not read at all.
type BadLines struct {
	TaskID string
	Count  int
	First  error // the first of them
	// Unread, when set, is why no line of the log was read: it is a
	// symlink, a FIFO or anything but a regular file (ErrUnsafe).
	Unread error
}

// MaxEventLine bounds a line of events.log a reader takes in: a longer
// one is skipped as a line that does not parse, without being held in
// memory whole.
const MaxEventLine = 1 << 20
