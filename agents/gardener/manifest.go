package gardener

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// ManifestFile is where the pending-actions manifest lives in the
// project repository; it travels in the gardener's pull request and is
// read back from the merge commit when it is applied.
const ManifestFile = "gardener/pending-actions.json"

// Kind is the kind of one manifest action.
type Kind string

// The manifest's actions (spec 30 §7.1).
const (
	AddLabel    Kind = "add_label"
	RemoveLabel Kind = "remove_label"
	Close       Kind = "close"
	Comment     Kind = "comment"
	CreateIssue Kind = "create_issue"
	EditBody    Kind = "edit_body"
	ClosePR     Kind = "close_pr"
)

// Action is one deferred tracker change. Issue targets an issue by
// number; Ref instead targets the issue a create_issue of the same
// manifest makes with that ID (a forward reference), and "#{id}" in a
// body is replaced by that issue's number when it is applied.
type Action struct {
	Action Kind   `json:"action"`
	Issue  int64  `json:"issue,omitempty"`
	Ref    string `json:"ref,omitempty"`
	PR     int64  `json:"pr,omitempty"`
	Label  string `json:"label,omitempty"`
	Body   string `json:"body,omitempty"`
	Title  string `json:"title,omitempty"`
	// Labels of a create_issue.
	Labels []string `json:"labels,omitempty"`
	// Reason of a close, logged and shown in the summary.
	Reason string `json:"reason,omitempty"`
	// ID names a create_issue for later actions' Ref.
	ID string `json:"id,omitempty"`
	// BaseSHA256 is the hash of the body an edit_body was decided on
	// (the lost-update guard): a body edited since is not overwritten.
	BaseSHA256 string `json:"base_sha256,omitempty"`
}

// Manifest is the ordered list of actions of one gardener run.
type Manifest []Action

// ErrManifest wraps every reason a manifest is refused.
var ErrManifest = errors.New("invalid manifest")

// Limits of a manifest.
const (
	maxActions = 500
	maxBody    = 64 << 10
	maxTitle   = 255
)

var idRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// refRe finds "#{id}" forward references in bodies.
var refRe = regexp.MustCompile(`#\{([a-z0-9][a-z0-9-]{0,62})\}`)

// ParseManifest decodes and validates a manifest. Unknown fields are an
// error; so is every problem Validate finds.
func ParseManifest(data []byte) (Manifest, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return Manifest{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", ManifestFile, ErrManifest, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// Validate checks every action's shape, that references point at an
// earlier create_issue, and the ordering rules: an edit_body comes
// before any add_label on its issue, a comment before the close of its
// issue is not required but a close is never followed by more changes to
// the same issue.
func (m Manifest) Validate() error {
	if len(m) > maxActions {
		return fmt.Errorf("%s: %w: %d actions (at most %d)", ManifestFile, ErrManifest, len(m), maxActions)
	}
	ids := map[string]bool{}
	labelled := map[string]bool{}
	closed := map[string]bool{}
	for i, a := range m {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s: action %d (%s): %w: %s", ManifestFile, i, a.Action, ErrManifest, fmt.Sprintf(format, args...))
		}
		if len(a.Body) > maxBody || len(a.Title) > maxTitle {
			return bad("body or title too long")
		}
		for _, r := range refRe.FindAllStringSubmatch(a.Body, -1) {
			if !ids[r[1]] {
				return bad("body refers to #{%s}, which no earlier create_issue defines", r[1])
			}
		}
		if a.Ref != "" && !ids[a.Ref] {
			return bad("ref %q names no earlier create_issue", a.Ref)
		}
		target := a.target()
		switch a.Action {
		case AddLabel, RemoveLabel:
			if err := needIssue(a); err != nil {
				return bad("%v", err)
			}
			if strings.TrimSpace(a.Label) == "" {
				return bad("no label")
			}
			if a.Action == AddLabel {
				labelled[target] = true
			}
		case Close, Comment:
			if err := needIssue(a); err != nil {
				return bad("%v", err)
			}
			if a.Action == Comment && strings.TrimSpace(a.Body) == "" {
				return bad("empty comment")
			}
		case EditBody:
			if err := needIssue(a); err != nil {
				return bad("%v", err)
			}
			if a.Ref != "" {
				return bad("edit_body of an issue this manifest creates")
			}
			if strings.TrimSpace(a.Body) == "" {
				return bad("empty body")
			}
			if len(a.BaseSHA256) != 64 {
				return bad("base_sha256 missing")
			}
			if labelled[target] {
				return bad("edit_body after an add_label of issue %s", target)
			}
		case CreateIssue:
			if strings.TrimSpace(a.Title) == "" || strings.TrimSpace(a.Body) == "" {
				return bad("title and body required")
			}
			if a.ID != "" {
				if !idRe.MatchString(a.ID) || ids[a.ID] {
					return bad("id %q malformed or defined twice", a.ID)
				}
				ids[a.ID] = true
			}
		case ClosePR:
			if a.PR <= 0 {
				return bad("pr required")
			}
		default:
			return bad("unknown action")
		}
		if a.Action != Close && a.Action != CreateIssue && a.Action != ClosePR && closed[target] {
			return bad("change to issue %s after its close", target)
		}
		if a.Action == Close {
			closed[target] = true
		}
	}
	return nil
}

func needIssue(a Action) error {
	if (a.Issue > 0) == (a.Ref != "") {
		return errors.New("exactly one of issue and ref required")
	}
	return nil
}

// target names the issue an action changes, for ordering checks.
func (a Action) target() string {
	if a.Ref != "" {
		return "{" + a.Ref + "}"
	}
	return fmt.Sprint(a.Issue)
}

// Encode renders the manifest as the file the pull request carries: one
// action per line inside a JSON array, so a review reads it line by line.
func (m Manifest) Encode() []byte {
	if len(m) == 0 {
		return []byte("[]\n")
	}
	var b strings.Builder
	b.WriteString("[\n")
	for i, a := range m {
		line, _ := json.Marshal(a)
		b.Write(line)
		if i < len(m)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

// Counts returns the number of actions per kind.
func (m Manifest) Counts() map[string]int {
	c := map[string]int{}
	for _, a := range m {
		c[string(a.Action)]++
	}
	return c
}

// BodyHash is the hex SHA-256 of an issue body, the lost-update guard of
// edit_body.
func BodyHash(body string) string {
	s := sha256.Sum256([]byte(body))
	return hex.EncodeToString(s[:])
}

// Key is the stable key of action i of the manifest merged as mergeSHA.
func Key(mergeSHA string, i int) string { return fmt.Sprintf("%s#%d", mergeSHA, i) }

// actionMarker is the hidden marker an applied comment, issue or body
// carries, by which a repeated application finds it.
func actionMarker(key string) string { return forge.RefMarker(forge.RefGardenerAction, key) }
