// Package tomlpos finds where things are in a TOML source: the line that
// defines a key, and the line, key and message of a decode error. The
// BurntSushi/toml decoder reports no positions for keys, so the source is
// scanned once and every table header and "key =" line is recorded.
//
// Paths are dotted keys as toml.Key.String() writes them ("ci.system"),
// except that the entries of an array of tables are numbered from 0 with
// '#': the "needs" key of the third [[steps]] table is "steps#2.needs".
// Unnumbered and Indexed convert such paths for other uses.
package tomlpos

import (
	"fmt"
	"strings"
)

// Locator maps key paths to the line that defines them. It understands the
// TOML that configuration files use (bare, quoted and dotted keys, tables,
// arrays of tables, multi-line strings and arrays, comments); a key it
// cannot place is not recorded and reported as line 0. Inline tables are
// recorded as their key only.
type Locator struct {
	lines map[string]int // path -> first line
	src   []string       // the source, one element per line
	keys  []Key          // every recorded path in file order
}

// Key is one recorded path and the 1-based line that defines it.
type Key struct {
	Path string // e.g. "steps#1.needs"
	Line int
}

// New scans src and returns its locator.
func New(src string) *Locator {
	l := &Locator{lines: map[string]int{}, src: strings.Split(src, "\n")}
	counts := map[string]int{}
	table := ""
	var closer string // non-empty while inside a multi-line string
	depth := 0        // open brackets of a multi-line array
	for i, raw := range l.src {
		n := i + 1
		line := raw
		if closer != "" {
			idx := strings.Index(line, closer)
			if idx < 0 {
				continue
			}
			closer = ""
			line = line[idx+3:]
		}
		if depth > 0 {
			depth += bracketDelta(line)
			continue
		}
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(t, "[["):
			name := cleanKey(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(stripComment(t), "[[")), "]]"))
			table = fmt.Sprintf("%s#%d", name, counts[name])
			counts[name]++
			l.add(table, n)
			continue
		case strings.HasPrefix(t, "["):
			table = cleanKey(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(stripComment(t), "[")), "]"))
			l.add(table, n)
			continue
		}
		eq := strings.Index(t, "=")
		if eq <= 0 {
			continue
		}
		key := cleanKey(t[:eq])
		if table != "" {
			key = table + "." + key
		}
		l.add(key, n)
		val := strings.TrimSpace(t[eq+1:])
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(val, q) && !strings.Contains(val[3:], q) {
				closer = q
			}
		}
		if strings.HasPrefix(val, "[") {
			depth = bracketDelta(val)
		}
	}
	return l
}

// add records path at line; the first definition wins. A numbered path is
// also recorded unnumbered, so keys as the decoder names them
// ("steps.needs") find their first occurrence.
func (l *Locator) add(path string, line int) {
	for _, p := range []string{path, Unnumbered(path)} {
		if _, ok := l.lines[p]; !ok {
			l.lines[p] = line
		}
	}
	l.keys = append(l.keys, Key{path, line})
}

// Line returns the line that defines path, or else the line of its closest
// recorded parent ("ci.bogus" falls back to the [ci] header), or 0.
func (l *Locator) Line(path string) int {
	for path != "" {
		if n, ok := l.lines[path]; ok {
			return n
		}
		i := strings.LastIndex(path, ".")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// ElementLine returns the line of field in the i-th (from 0) table of the
// array of tables named array, with Line's parent fallback; field "" asks
// for the table's header: ElementLine("steps", 2, "needs") is
// Line("steps#2.needs").
func (l *Locator) ElementLine(array string, i int, field string) int {
	p := Element(array, i)
	if field != "" {
		p += "." + field
	}
	return l.Line(p)
}

// Keys returns every recorded path in file order, repeated definitions
// included.
func (l *Locator) Keys() []Key {
	return append([]Key(nil), l.keys...)
}

// OpensMultiline reports whether line n ends with a multi-line string
// opener, so the string's text starts on the next line. (The decoder drops
// the newline right after an opener.)
func (l *Locator) OpensMultiline(n int) bool {
	if n < 1 || n > len(l.src) {
		return false
	}
	t := strings.TrimSpace(l.src[n-1])
	return (strings.HasSuffix(t, `"""`) && strings.Count(t, `"""`) == 1) || (strings.HasSuffix(t, "'''") && strings.Count(t, "'''") == 1)
}

// Element returns the path of the i-th (from 0) table of an array of
// tables: Element("steps", 2) is "steps#2".
func Element(array string, i int) string {
	return fmt.Sprintf("%s#%d", array, i)
}

// Unnumbered drops the array indices of path, giving the key as the
// decoder names it: "steps#2.needs" -> "steps.needs".
func Unnumbered(path string) string {
	if !strings.Contains(path, "#") {
		return path
	}
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if j := strings.IndexByte(p, '#'); j >= 0 {
			parts[i] = p[:j]
		}
	}
	return strings.Join(parts, ".")
}

// Indexed writes the array indices of path in brackets, for messages:
// "steps#1.neds" -> "steps[1].neds".
func Indexed(path string) string {
	var b strings.Builder
	in := false
	for _, c := range path {
		switch {
		case c == '#':
			b.WriteByte('[')
			in = true
		case in && (c < '0' || c > '9'):
			b.WriteByte(']')
			b.WriteRune(c)
			in = false
		default:
			b.WriteRune(c)
		}
	}
	if in {
		b.WriteByte(']')
	}
	return b.String()
}

// cleanKey normalises a (possibly dotted, quoted or spaced) key.
func cleanKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// stripComment drops a trailing comment from a table header.
func stripComment(s string) string {
	if i := strings.Index(s, "#"); i >= 0 && !strings.ContainsAny(s[:i], `"'`) {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// bracketDelta counts '[' minus ']' outside of quoted strings and comments.
func bracketDelta(s string) int {
	d := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return d
		case c == '[':
			d++
		case c == ']':
			d--
		}
	}
	return d
}
