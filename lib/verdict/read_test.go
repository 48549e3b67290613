package verdict_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

func TestReadIgnoresEveryoneWithoutAReviewBot(t *testing.T) {
	const h = "2222222222222222222222222222222222222222"
	cs := []forge.Comment{{Body: verdict.Marker(verdict.Approve, h)}, {Author: "mallory", Body: verdict.Marker(verdict.Approve, h)}}
	rs := []forge.Review{{State: forge.ReviewApprove, CommitID: h}}
	if r, ok := verdict.Read(cs, rs, h, ""); ok {
		t.Fatalf("Read with no review bot = %+v", r)
	}
}

func TestReadFormal(t *testing.T) {
	const h1, h2 = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	writers := map[string]bool{"alice": true, "bob": true}
	approve := func(who, head string) forge.Review {
		return forge.Review{Author: who, State: forge.ReviewApprove, CommitID: head, Body: "ok by " + who}
	}
	tests := []struct {
		name    string
		reviews []forge.Review
		want    verdict.Verdict
		body    string
		ok      bool
		asked   []string
	}{
		{"nothing", nil, "", "", false, nil},
		{"writer's approval", []forge.Review{approve("alice", h2)}, verdict.Approve, "ok by alice", true, []string{"alice"}},
		{"outsider's approval", []forge.Review{approve("mallory", h2)}, "", "", false, []string{"mallory"}},
		{"older head", []forge.Review{approve("alice", h1)}, "", "", false, nil},
		{"dismissed", []forge.Review{{Author: "alice", State: forge.ReviewApprove, CommitID: h2, Dismissed: true}}, "", "", false, nil},
		{"comment review", []forge.Review{{Author: "alice", State: forge.ReviewComment, CommitID: h2}}, "", "", false, nil},
		{"newest trusted wins", []forge.Review{
			approve("alice", h2),
			{Author: "bob", State: forge.ReviewRequestChanges, CommitID: h2, Body: "fix it"},
			approve("mallory", h2),
			approve("mallory", h2),
		}, verdict.RequestChanges, "fix it", true, []string{"mallory", "bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			r, ok, err := verdict.ReadFormal(tt.reviews, h2, func(login string) (bool, error) {
				asked = append(asked, login)
				return writers[login], nil
			})
			if err != nil || ok != tt.ok || r.Verdict != tt.want || r.Feedback != tt.body || (ok && (!r.Formal || r.SHA != h2)) {
				t.Errorf("ReadFormal = %+v, %v, %v", r, ok, err)
			}
			if !slices.Equal(asked, tt.asked) {
				t.Errorf("asked about %v, want %v", asked, tt.asked)
			}
		})
	}
	boom := errors.New("forbidden")
	if _, ok, err := verdict.ReadFormal([]forge.Review{approve("alice", h2)}, h2, func(string) (bool, error) { return true, boom }); ok || !errors.Is(err, boom) {
		t.Fatalf("ReadFormal with a failing check = %v, %v", ok, err)
	}
}
