package formula

import (
	"fmt"
	"strings"
)

// locator maps TOML key paths to the line that defines them. The TOML
// decoder reports no positions for keys, so the source is scanned once:
// table headers and "key =" lines are recorded, with array-of-tables
// entries numbered ("steps#2.needs"). It understands exactly the subset of
// TOML formulas use (bare or quoted keys, multi-line strings and arrays);
// a line it cannot place is simply not recorded and reported as line 0.
type locator struct {
	lines map[string]int // path -> first line
	src   []string       // the source, one element per line
	order []locPos       // every recorded path in file order
}

type locPos struct {
	path string
	line int
}

func newLocator(src string) *locator {
	l := &locator{lines: map[string]int{}, src: strings.Split(src, "\n")}
	counts := map[string]int{}
	table := ""
	var closer string // non-empty while inside a multi-line string
	depth := 0        // open brackets of a multi-line array
	for i, raw := range l.src {
		n := i + 1
		line := raw
		if closer != "" {
			if idx := strings.Index(line, closer); idx >= 0 {
				closer = ""
				line = line[idx+3:]
			} else {
				continue
			}
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

func (l *locator) add(path string, line int) {
	if _, ok := l.lines[path]; !ok {
		l.lines[path] = line
	}
	l.order = append(l.order, locPos{path, line})
}

// line returns the line of path, or of its closest recorded parent.
func (l *locator) line(path string) int {
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

// stepLine returns the line of field in the i-th [[steps]] table (field ""
// for the header).
func (l *locator) stepLine(i int, field string) int {
	p := fmt.Sprintf("steps#%d", i)
	if field != "" {
		p += "." + field
	}
	return l.line(p)
}

// unnumbered drops the "#N" array indices: "steps#2.needs" -> "steps.needs".
func unnumbered(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if j := strings.IndexByte(p, '#'); j >= 0 {
			parts[i] = p[:j]
		}
	}
	return strings.Join(parts, ".")
}

// cleanKey normalises a (possibly dotted, quoted or spaced) key.
func cleanKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

func stripComment(s string) string {
	if i := strings.Index(s, "#"); i >= 0 && !strings.ContainsAny(s[:i], `"'`) {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// bracketDelta counts '[' minus ']' outside of quoted strings.
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

// opensMultiline reports whether line n ends with a multi-line string
// opener, so the string's text starts on the next line.
func (l *locator) opensMultiline(n int) bool {
	if n < 1 || n > len(l.src) {
		return false
	}
	t := strings.TrimSpace(l.src[n-1])
	return (strings.HasSuffix(t, `"""`) && strings.Count(t, `"""`) == 1) || (strings.HasSuffix(t, "'''") && strings.Count(t, "'''") == 1)
}
