package provision

import (
	"embed"
	"io/fs"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// opsFiles is the ops repository layout (00 §3.2, 70 §0.3): directories
// kept with .gitkeep files, the vault policy, stub documents and a README.
//
//go:embed all:opslayout
var opsFiles embed.FS

// opsLayout returns the layout's files for project repo (owner/name) with
// admin as the approving administrator, sorted by path.
func opsLayout(repo, admin string) []forge.NewFile {
	var out []forge.NewFile
	// The embedded tree is fixed at build time; walking it cannot fail.
	_ = fs.WalkDir(opsFiles, "opslayout", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := opsFiles.ReadFile(path)
		if err != nil {
			return err
		}
		text := strings.NewReplacer("{{repo}}", repo, "{{admin}}", admin).Replace(string(data))
		out = append(out, forge.NewFile{Path: strings.TrimPrefix(path, "opslayout/"), Content: []byte(text)})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// missingFiles returns the files of want whose path is not in have.
func missingFiles(want []forge.NewFile, have []string) []forge.NewFile {
	present := make(map[string]bool, len(have))
	for _, h := range have {
		present[h] = true
	}
	var out []forge.NewFile
	for _, f := range want {
		if !present[f.Path] {
			out = append(out, f)
		}
	}
	return out
}
