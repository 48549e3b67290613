package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

func TestWoodpeckerEnv(t *testing.T) {
	wp := "name = \"a\"\nrepo = \"o/a\"\n[ci]\nsystem = \"woodpecker\"\nwoodpecker_repo_id = 3\n"
	plain := "name = \"a\"\nrepo = \"o/a\"\n"
	tests := []struct {
		name    string
		project string
		env     map[string]string
		want    []string // one substring per problem line; nil: valid
	}{
		{"complete", wp, map[string]string{"WOODPECKER_SERVER": "http://woodpecker:8000/", "WOODPECKER_TOKEN": "wp-token"}, nil},
		{"no server", wp, map[string]string{"WOODPECKER_TOKEN": "wp-token"},
			[]string{`environment: WOODPECKER_SERVER: is required: project a (a.toml) has ci.system = "woodpecker"`}},
		{"no token", wp, map[string]string{"WOODPECKER_SERVER": "http://woodpecker:8000"},
			[]string{`environment: WOODPECKER_TOKEN: is required: project a (a.toml) has ci.system = "woodpecker"`}},
		{"neither", wp, nil, []string{"WOODPECKER_SERVER: is required", "WOODPECKER_TOKEN: is required"}},
		{"not a URL", wp, map[string]string{"WOODPECKER_SERVER": "woodpecker:8000", "WOODPECKER_TOKEN": "t"},
			[]string{`environment: WOODPECKER_SERVER: "woodpecker:8000" is not an absolute http(s) URL`}},
		{"credentials in URL", wp, map[string]string{"WOODPECKER_SERVER": "http://u:secret@woodpecker:8000", "WOODPECKER_TOKEN": "t"},
			[]string{"environment: WOODPECKER_SERVER: must not carry credentials; set WOODPECKER_TOKEN"}},
		{"not needed without woodpecker", plain, nil, nil},
		{"bad URL checked anyway", plain, map[string]string{"WOODPECKER_SERVER": "ftp://x"}, []string{"WOODPECKER_SERVER"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.env, map[string]string{"a.toml": tc.project})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected problems:\n%v", err)
				}
				if tc.env["WOODPECKER_SERVER"] != "" && (c.Woodpecker.Server != "http://woodpecker:8000" || c.Woodpecker.Token != tc.env["WOODPECKER_TOKEN"]) {
					t.Fatalf("woodpecker = %+v", c.Woodpecker)
				}
				return
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("problem shows the credentials: %v", err)
			}
		})
	}
}
