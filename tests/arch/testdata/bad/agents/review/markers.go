package review

import (
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

func reads(c forge.Comment, p forge.PullRequest, body string) {
	_, _ = forge.FindMarker(c.Body, "claim")
	_ = forge.FindRefMarkers(p.Body, forge.RefDisintoIssue)
	_, _, _ = verdict.ParseMarker(c.Body)
	_, _ = c.MarkerBy("claim", "dev-bot")
	_, _ = forge.FindMarker(body, "claim")
}
