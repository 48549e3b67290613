package vision

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestIsTemplate(t *testing.T) {
	if !IsTemplate(Template("widgets")) {
		t.Error("the seeded template is not recognised")
	}
	for _, empty := range []string{"", "  \n\n"} {
		if !IsTemplate(empty) {
			t.Errorf("%q is a vision", empty)
		}
	}
	edited := strings.Replace(Template("widgets"), templateMarker+"\n", "", 1)
	if IsTemplate(edited) {
		t.Error("a template whose marker a maintainer removed is still taken for the template")
	}
	if IsTemplate("# Vision\n\n## Launch\n\nThe site is live.\n") {
		t.Error("a real vision is taken for the template")
	}
}

// The issue forms parse as YAML with the fields Forgejo requires, and
// the bug report carries the label the reproduce agent works from.
func TestIssueTemplates(t *testing.T) {
	ts := IssueTemplates()
	if len(ts) != 2 {
		t.Fatalf("%d templates", len(ts))
	}
	for path, text := range ts {
		var form struct {
			Name   string   `yaml:"name"`
			About  string   `yaml:"about"`
			Labels []string `yaml:"labels"`
			Body   []struct {
				Type       string         `yaml:"type"`
				ID         string         `yaml:"id"`
				Attributes map[string]any `yaml:"attributes"`
			} `yaml:"body"`
		}
		if err := yaml.Unmarshal([]byte(text), &form); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if form.Name == "" || form.About == "" || len(form.Body) == 0 {
			t.Errorf("%s: name %q about %q, %d fields", path, form.Name, form.About, len(form.Body))
		}
		for _, f := range form.Body {
			if f.Type != "textarea" || f.ID == "" || f.Attributes["label"] == "" {
				t.Errorf("%s: field %+v", path, f)
			}
		}
		if strings.HasSuffix(path, "bug.yaml") && (len(form.Labels) != 1 || form.Labels[0] != "bug-report") {
			t.Errorf("%s: labels %v, want bug-report", path, form.Labels)
		}
	}
}
