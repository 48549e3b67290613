package forgejocheck

import (
	"strings"
	"testing"
)

// The checker must see what it is there to see: each case feeds it a
// difference it must report, so the contract test cannot pass by
// checking nothing.

func keys(fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Key)
	}
	return strings.Join(out, "\n")
}

func TestCheckRequestReportsWhatForgejoLacks(t *testing.T) {
	spec := loadSpec(t)
	for _, tc := range []struct {
		name string
		req  Request
		want string // "" for no finding
	}{
		{"known route", Request{Method: "GET", Path: "/repos/o/r/issues", Query: map[string][]string{"state": {"open"}, "page": {"1"}}}, ""},
		{"unknown route", Request{Method: "GET", Path: "/repos/o/r/nonexistent"}, "route GET /repos/o/r/nonexistent"},
		{"unknown method", Request{Method: "DELETE", Path: "/version"}, "route DELETE /version"},
		{"unknown query parameter", Request{Method: "GET", Path: "/repos/o/r/issues", Query: map[string][]string{"frobnicate": {"1"}}}, "query GET /repos/{owner}/{repo}/issues frobnicate"},
		{"unknown body field", Request{Method: "POST", Path: "/repos/o/r/issues", ContentType: "application/json", Body: []byte(`{"title":"t","frobnicate":true}`)}, "body POST /repos/{owner}/{repo}/issues frobnicate"},
		{"unknown nested body field", Request{Method: "POST", Path: "/repos/o/r/hooks", ContentType: "application/json", Body: []byte(`{"type":"gitea","config":{"url":"u"},"events":["push"],"branch_filter":"*","frob":{"a":1}}`)}, "body POST /repos/{owner}/{repo}/hooks frob"},
		{"zero field the SDK always sends", Request{Method: "POST", Path: "/repos/o/r/issues", ContentType: "application/json", Body: []byte(`{"title":"t","frobnicate":false}`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keys(spec.CheckRequest(tc.req))
			if got != tc.want {
				t.Errorf("findings %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckDecodesReportsFieldsForgejoLacks(t *testing.T) {
	spec := loadSpec(t)
	ds := []Decode{
		{Type: "Issue", Path: []string{"user", "login"}, Pos: "a.go:1"},
		{Type: "Issue", Path: []string{"no_such_field"}, Pos: "a.go:2"},
		{Type: "PullRequest", Path: []string{"head", "no_such_field"}, Pos: "a.go:3"},
		{Type: "NoSuchType", Path: []string{"id"}, Pos: "a.go:4"},
		{Method: "GET", Route: "/repos/{}/{}/issues/{}", Path: []string{"title"}, Pos: "a.go:5"},
		{Method: "GET", Route: "/repos/{}/{}/issues/{}", Path: []string{"bogus"}, Pos: "a.go:6"},
		{Method: "GET", Route: "/repos/{}/{}/nonexistent", Path: []string{"id"}, Pos: "a.go:7"},
	}
	got := keys(spec.CheckDecodes(ds, nil))
	want := strings.Join([]string{
		"field Issue.no_such_field",
		"field PullRequest.head.no_such_field",
		"type NoSuchType",
		"field GET /repos/{owner}/{repo}/issues/{index} bogus",
		"route GET /repos/{}/{}/nonexistent",
	}, "\n")
	if got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

func TestCheckInvocationReportsUnknownFlagsAndCommands(t *testing.T) {
	cmds, err := LoadCommands(forgejoSource(t))
	if err != nil {
		t.Fatal(err)
	}
	text := "set -e\nforgejo admin user create --admin --username \"$U\" \\\n  --email x@y --fake-flag=1 >/dev/null\n" +
		"forgejo admin user frobnicate --username u\n" +
		"forgejo admin user must-change-password --unset \"$U\" | cat\n"
	invs := FindInvocations(text, "t.sh")
	if len(invs) != 3 {
		t.Fatalf("invocations: %v", invs)
	}
	var all []Finding
	for _, inv := range invs {
		all = append(all, cmds.CheckInvocation(inv)...)
	}
	want := "flag forgejo admin user create --fake-flag\ncommand forgejo admin user frobnicate"
	if got := keys(all); got != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	if invs[0].Where != "t.sh:2" {
		t.Errorf("where: %s", invs[0].Where)
	}
}

func TestCompareStandInWantsExactlyTheProductsFlags(t *testing.T) {
	cmds, err := LoadCommands(forgejoSource(t))
	if err != nil {
		t.Fatal(err)
	}
	script := `forgejo_flags() {
	case "$1" in
	"admin user list") echo "admin" ;;
	"admin user create") echo "admin= username= restricted" ;;
	*) return 1 ;;
	esac
}`
	s, err := ParseStandIn(script)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]map[string]bool{
		"admin user list":                 {"admin": true},
		"admin user create":               {"admin": true, "username": true, "email": true},
		"admin user must-change-password": {"unset": true},
	}
	want := strings.Join([]string{
		"standin forgejo admin user create --admin",      // a value for a boolean
		"standin forgejo admin user create --email",      // refused, but passed
		"standin forgejo admin user create --restricted", // accepted, never passed
		"standin forgejo admin user must-change-password",
	}, "\n")
	if got := keys(cmds.CompareStandIn(s, used)); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

func TestStructsLacks(t *testing.T) {
	structs, err := LoadStructs(forgejoSource(t) + "/modules/structs")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"repository.full_name": "",
		"issue.number":         "",
		"issue.frobnicate":     "issue.frobnicate",
		"frobnicate":           "frobnicate",
	} {
		if got := structs.Lacks("IssuePayload", strings.Split(path, ".")); got != want {
			t.Errorf("IssuePayload lacks %s: %q, want %q", path, got, want)
		}
	}
}

func TestFilterKeepsTheAllowlistHonest(t *testing.T) {
	allowed, err := ParseAllowlist(strings.NewReader("# c\n\na | v1 | why\nb | v0 | old\nc | v1 | gone\n"))
	if err != nil {
		t.Fatal(err)
	}
	unexpected, stale := Filter(allowed, "v1", []Finding{{Key: "a"}, {Key: "b"}, {Key: "d"}})
	if keys(unexpected) != "b\nd" {
		t.Errorf("unexpected: %v", unexpected)
	}
	if len(stale) != 2 || !strings.Contains(stale[0], "check it again") || !strings.Contains(stale[1], "remove it") {
		t.Errorf("stale: %q", stale)
	}
	if _, err := ParseAllowlist(strings.NewReader("a | v1\n")); err == nil {
		t.Error("an entry without a reason was accepted")
	}
}
