package formula

import "testing"

func FuzzParse(f *testing.F) {
	f.Add([]byte("name = \"fuzz\"\ndescription = \"d\"\nversion = 1\n[[steps]]\nid = \"a\"\ntitle = \"A\"\nneeds = [\"a\"]\ndescription = \"{{x}}\"\n"))
	f.Add([]byte("[[steps]]\n[[steps]]\nid = \"\"\n[vars.\"\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, err := Parse("fuzz.toml", data)
		if (fm == nil) == (err == nil) {
			t.Fatalf("Parse returned formula %v and error %v", fm, err)
		}
		if err != nil && len(Problems(err)) == 0 {
			t.Fatalf("error without problems: %v", err)
		}
	})
}
