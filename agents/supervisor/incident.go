package supervisor

import (
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// incidentTitlePrefix starts every incident's title.
const incidentTitlePrefix = "[supervisor] "

// escalate files or updates one incident per fingerprint for the queued
// findings, and resolves the open incidents whose condition cleared. An
// unknown anomaly is shown to the model first, when one is configured.
// With the forge unreachable nothing is filed; the journal says so.
func (p *pass) escalate() {
	f := p.a.o.Forge
	if f == nil || !p.snap.observed(SourceForge) {
		return
	}
	present := map[string]bool{}
	for _, r := range p.a.o.Rules {
		for _, fd := range p.findings {
			if fd.Rule == r.ID {
				present[r.fingerprint(fd)] = true
			}
		}
	}
	for _, e := range p.escalations {
		fd := &p.findings[e.index]
		fp := e.rule.fingerprint(*fd)
		if e.rule.ID == RuleRunFailures && p.a.o.Analyst != nil {
			p.analyse(fd)
		}
		if e.rule.ID == RuleDisk && p.a.o.Vault != nil {
			err := p.a.o.Vault.Request(p.ctx, VaultAction{Fingerprint: fp,
				What: "prune images no compose service references", Why: fd.Summary})
			p.act(fd, "asked the vault to approve an aggressive image prune", 0, err)
		}
		n, err := p.file(fp, e.rule, *fd)
		if err != nil {
			p.log.Warn().Err(err).Str("fingerprint", fp).Msg("file incident")
			continue
		}
		fd.Incident = n
		if rs := p.st.Rules[fd.id()]; rs != nil {
			rs.LastEscalation = p.now
		}
	}
	// Resolve what cleared: only incidents of rules whose source was read.
	sources := map[string]string{}
	for _, r := range p.a.o.Rules {
		sources[r.ID] = r.Source
	}
	for fp, is := range p.snap.Incidents {
		m, _ := is.MarkerBy(forge.MarkerIncident, p.snap.Bot)
		rule := m.Fields["rule"]
		src, known := sources[rule]
		if present[fp] || !known || (src != SourceLocal && !p.snap.observed(src)) {
			continue
		}
		if src == SourceLocal && (rule == RuleDockerBlind || rule == RuleForgeUnreached) && !p.snap.observed(SourceForge) {
			continue
		}
		fd := &Finding{Rule: rule, Key: fp}
		_, err := f.CreateComment(p.ctx, is.Number, fmt.Sprintf("Resolved: the condition cleared at %s.", p.now.UTC().Format(time.RFC3339)))
		if err == nil {
			err = f.CloseIssue(p.ctx, is.Number)
		}
		p.act(fd, fmt.Sprintf("resolved incident #%d (%s)", is.Number, fp), 0, err)
		delete(p.st.Incidents, fp)
	}
}

// file opens the incident of fingerprint fp, or updates the open one's
// body with the latest finding, and returns its number.
func (p *pass) file(fp string, r Rule, fd Finding) (int64, error) {
	body, err := incidentBody(fp, r, fd, p.now, p.a.o.Maintainers)
	if err != nil {
		return 0, err
	}
	if is, ok := p.snap.Incidents[fp]; ok {
		if _, err := p.a.o.Forge.EditIssue(p.ctx, is.Number, forge.IssueEdit{Body: &body}); err != nil {
			return 0, fmt.Errorf("update incident #%d: %w", is.Number, err)
		}
		p.act(&fd, fmt.Sprintf("updated incident #%d (%s)", is.Number, fp), 0, nil)
		return is.Number, nil
	}
	is, err := p.a.o.Forge.CreateIssue(p.ctx, forge.NewIssue{Title: incidentTitlePrefix + text.Clip(fd.Summary, 120), Body: body})
	if err != nil && is.Number == 0 {
		return 0, fmt.Errorf("open incident %s: %w", fp, err)
	}
	if p.st.Incidents == nil {
		p.st.Incidents = map[string]int64{}
	}
	p.st.Incidents[fp] = is.Number
	p.snap.Incidents[fp] = is
	p.act(&fd, fmt.Sprintf("opened incident #%d (%s)", is.Number, fp), 0, nil)
	return is.Number, nil
}

// incidentBody renders the incident's body: the marker, the finding, its
// evidence (neutralised: it may quote untrusted text) and who is asked.
func incidentBody(fp string, r Rule, fd Finding, now time.Time, maintainers []string) (string, error) {
	marker, err := forge.Marker{Kind: forge.MarkerIncident, Fields: map[string]string{"fingerprint": fp, "rule": r.ID}}.String()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(marker + "\n")
	fmt.Fprintf(&b, "**[%s] %s**\n\n", fd.Severity, forge.Neutralise(fd.Summary))
	fmt.Fprintf(&b, "Last seen %s by the supervisor's `%s` rule.\n", now.UTC().Format(time.RFC3339), r.ID)
	if fd.evidence != "" {
		b.WriteString("\n" + forge.Neutralise(fd.evidence) + "\n")
	}
	b.WriteString("\nThe supervisor closes this issue when the condition clears." + mentions(maintainers) + "\n")
	return b.String(), nil
}
