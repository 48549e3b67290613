package vault

import "time"

// ActionStatus is one action as status shows it: its state, tier and
// first line of detail when its dispatcher last looked.
type ActionStatus struct {
	Project string    `json:"project"`
	ID      string    `json:"id"`
	Tier    string    `json:"tier,omitempty"`
	State   string    `json:"state"`
	Detail  string    `json:"detail,omitempty"`
	Checked time.Time `json:"checked"`
}
