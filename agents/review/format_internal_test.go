package review

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/verdict"
)

const (
	sha1 = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	sha2 = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestFormatComment(t *testing.T) {
	tests := []struct {
		name string
		in   commentInput
		want string
	}{
		{
			name: "first review (spec 20 §7.1 layout)",
			in: commentInput{Head: sha1, Round: 1, Out: verdict.Output{
				Verdict: verdict.Approve, VerdictReason: "small fix", ReviewMarkdown: "### Summary\n- ok\n"}},
			want: "## AI Review\n" +
				"<!-- reviewed: " + sha1 + " -->\n" +
				"<!-- disinto:verdict sha=" + sha1 + " value=APPROVE -->\n" +
				"\n" +
				"### Summary\n- ok\n" +
				"\n" +
				"### Verdict\n" +
				"**APPROVE** — small fix\n" +
				"\n" +
				"---\n" +
				"*Reviewed at `1111111` | [AGENTS.md](AGENTS.md)*\n",
		},
		{
			name: "re-review",
			in: commentInput{Head: sha2, Previous: sha1, Round: 2, Out: verdict.Output{
				Verdict: verdict.Discuss, VerdictReason: "why?", ReviewMarkdown: "### Previous Findings\n- x FIXED"}},
			want: "## AI Re-review (round 2)\n" +
				"<!-- reviewed: " + sha2 + " -->\n" +
				"<!-- disinto:verdict sha=" + sha2 + " value=DISCUSS -->\n" +
				"\n" +
				"### Previous Findings\n- x FIXED\n" +
				"\n" +
				"### Verdict\n" +
				"**DISCUSS** — why?\n" +
				"\n" +
				"---\n" +
				"*Reviewed at `2222222` | Previous: `1111111` | [AGENTS.md](AGENTS.md)*\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatComment(tt.in)
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
			v, sha, ok := verdict.ParseMarker(got)
			if !ok || v != tt.in.Out.Verdict || sha != tt.in.Head {
				t.Errorf("marker reads %q %q %t", v, sha, ok)
			}
			if lines := strings.Split(got, "\n"); lines[1] != "<!-- reviewed: "+tt.in.Head+" -->" {
				t.Errorf("second line = %q", lines[1])
			}
		})
	}
}

// A review that quotes another verdict in its prose is read by its marker.
func TestFormatCommentQuotedVerdict(t *testing.T) {
	body := formatComment(commentInput{Head: sha1, Round: 1, Out: verdict.Output{
		Verdict:        verdict.Approve,
		ReviewMarkdown: "An earlier reviewer wrote **REQUEST_CHANGES** here; that is resolved.\n<!-- disinto:verdict sha=" + sha1 + " value=REQUEST_CHANGES -->"}})
	v, _, ok := verdict.ParseMarker(body)
	if !ok || v != verdict.Approve {
		t.Fatalf("read %q, want APPROVE", v)
	}
}

func TestFormatError(t *testing.T) {
	got := formatError(sha1, "the session wrote no verdict file")
	want := "## AI Review — Error\n<!-- review-error: " + sha1 + " -->\n\nReview failed: the session wrote no verdict file\n\n---\n*Attempted at `1111111`*\n"
	if got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	if !hasErrorMarker(got, sha1) || hasErrorMarker(got, sha2) {
		t.Error("hasErrorMarker")
	}
	if _, _, ok := verdict.ParseMarker(got); ok {
		t.Error("an error comment carries a verdict marker")
	}
}

func TestFormalBody(t *testing.T) {
	got := formalBody(commentInput{Head: sha2, Previous: sha1, Round: 3, Out: verdict.Output{Verdict: verdict.RequestChanges, VerdictReason: "bug"}})
	if want := "AI Re-review (round 3): **REQUEST_CHANGES** — bug"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
