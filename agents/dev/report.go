package dev

import (
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/text"
)

var _ agent.Reporter = (*Agent)(nil)

// Report implements agent.Reporter: every issue with a live run, its
// stage and the attempts spent, the issues that wait for a maintainer's
// backlog (origin.go), and the mirror pushes the vault has not
// taken yet (those it took are its pending actions). It
// reads the state directory only.
func (a *Agent) Report() agent.Report {
	var rep agent.Report
	role := string(config.RoleDev)
	nums, _ := a.st.list()
	for _, n := range nums {
		st, ok, err := a.st.load(n)
		if err != nil || !ok || st.Stage.Terminal() {
			continue
		}
		it := agent.Item{Project: a.o.Project, Role: role, Issue: st.Issue, PR: st.PR, Stage: string(st.Stage),
			Started: st.Started, Attempts: map[string]int{}, Limits: map[string]int{
				"ci": a.lim.CIFixes, "review": a.lim.ReviewRounds, "rebase": a.lim.Rebases}}
		for k, v := range map[string]int{"ci": st.CIFixes, "review": st.ReviewRounds, "rebase": st.Rebases} {
			if v > 0 {
				it.Attempts[k] = v
			}
		}
		if a.m[st.Stage].by == byTick {
			it.Waiting = st.WaitingSince
		}
		if st.Stage == StageHeld || st.Stage == StageAwaitingApproval {
			it.Human = st.Human
		}
		rep.Items = append(rep.Items, it)
	}
	rep.Items = append(rep.Items, a.originReport()...)
	for _, p := range a.PendingMirrors() {
		rep.Pending = append(rep.Pending, agent.Pending{Project: a.o.Project, Role: role, What: "mirror push request", Target: p.Mirror,
			Detail: text.ShortSHA(p.SHA), Queued: p.Queued, Attempts: p.Attempts, Next: p.Next, Error: p.Error})
	}
	return rep
}
