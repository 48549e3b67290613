package patch

// File is one file's change in a diff, line by line.
type File struct {
	// Old and New are the paths before and after, without git's a/ and
	// b/ prefixes; "" stands for /dev/null (a created or deleted file).
	Old, New string
	// Copied marks a copy: Old is left as it was.
	Copied bool
	Hunks  []Hunk
}

// Deleted reports whether the change removes the file.
func (f File) Deleted() bool { return f.New == "" && f.Old != "" }

// Hunk is one hunk of a file's change.
type Hunk struct {
	// OldStart and NewStart are the first line numbers the header gives.
	OldStart, NewStart int
	// Section is the text after the header's closing @@: the line git
	// shows as the enclosing function, "" when none.
	Section string
	Lines   []Line
}

// Op is what a diff line does.
type Op byte

// The operations of diff lines.
const (
	Context Op = ' '
	Add     Op = '+'
	Remove  Op = '-'
)

// Line is one line of a hunk.
type Line struct {
	Op Op
	// Old is the line's number in the old file (0 for an added line), New
	// in the new file (0 for a removed line).
	Old, New int
	// Text is the line without its operation character.
	Text string
}

// Parse reads a unified diff (git format) into its files and their hunks.
// Text before the first "diff --git" line is dropped; the same rules as
// Files decide what is a header and what is content.
func Parse(diff string) []File {
	fs := splitDiff(diff)
	out := make([]File, 0, len(fs))
	for _, f := range fs {
		out = append(out, File{Old: f.Old, New: f.New, Copied: f.Copied, Hunks: f.Hunks})
	}
	return out
}

// record appends a counted hunk line to the current hunk.
func (p *parser) record(op byte, l string) {
	f := &p.files[len(p.files)-1]
	if len(f.Hunks) == 0 {
		return
	}
	h := &f.Hunks[len(f.Hunks)-1]
	text := ""
	if l != "" {
		text = l[1:]
	}
	ln := Line{Op: Op(op), Text: text}
	switch Op(op) {
	case Context:
		ln.Old, ln.New = p.oldLine, p.newLine
		p.oldLine++
		p.newLine++
	case Remove:
		ln.Old = p.oldLine
		p.oldLine++
	case Add:
		ln.New = p.newLine
		p.newLine++
	}
	h.Lines = append(h.Lines, ln)
}
