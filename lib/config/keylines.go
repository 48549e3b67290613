package config

import (
	"bufio"
	"bytes"
	"strings"
)

// keyLines maps dotted keys to the line that defines them. BurntSushi/toml
// does not expose key positions, so the file is scanned line by line:
// enough for the flat tables and simple assignments project files use.
type keyLines map[string]int

func keyLinesOf(data []byte) keyLines {
	kl := keyLines{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			name := strings.Trim(line, "[] \t")
			if i := strings.Index(name, "#"); i >= 0 {
				name = strings.TrimSpace(strings.Trim(name[:i], "[] \t"))
			}
			table = unquoteKey(name)
			if _, ok := kl[table]; !ok {
				kl[table] = n
			}
		default:
			k, _, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			key := unquoteKey(strings.TrimSpace(k))
			if table != "" {
				key = table + "." + key
			}
			if _, ok := kl[key]; !ok {
				kl[key] = n
			}
		}
	}
	return kl
}

func unquoteKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// of returns the line of key, or of its closest defined parent table, or 0.
func (kl keyLines) of(key string) int {
	for k := key; k != ""; {
		if n, ok := kl[k]; ok {
			return n
		}
		i := strings.LastIndex(k, ".")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}
