package scheduler

// Trigger asks for a run of project/role soon: after Settle when the job
// had no trigger for Debounce, else after Debounce, so that a lone event
// is acted on at once and a burst costs few runs. Triggers arriving while
// one is pending coalesce; a trigger arriving while the job runs is kept
// and starts a run as soon as the current one ends, so an event is never
// lost to "no overlap". It reports whether the job exists.
func (s *Scheduler) Trigger(project, role string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.byKey[project+"/"+role]
	if !ok {
		return false
	}
	now := s.opts.Clock.Now()
	if j.triggerAt.IsZero() {
		delay := s.opts.Debounce
		if j.triggered.IsZero() || now.Sub(j.triggered) >= s.opts.Debounce {
			delay = s.opts.Settle
		}
		j.triggerAt = now.Add(delay)
	}
	j.triggered = now
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}
