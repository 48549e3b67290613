package git

// ReportAllProgress makes every progress line of g's clones reach its log,
// however short the clone.
func (g *Git) ReportAllProgress() { g.allProgress = true }
