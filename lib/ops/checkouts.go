package ops

import "sync"

// Checkouts hands out one Repo per checkout directory in a process: two
// Repos on one directory would run git in it at once, each unaware of the
// other's lock. The first Open of a directory sets its options; every
// caller of one directory acts as one identity, so they agree.
type Checkouts struct {
	mu    sync.Mutex
	byDir map[string]*Repo
}

// Open returns the Repo of o.Dir, opening it on first use.
func (c *Checkouts) Open(o Options) *Repo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.byDir[o.Dir]; ok {
		return r
	}
	if c.byDir == nil {
		c.byDir = map[string]*Repo{}
	}
	r := Open(o)
	c.byDir[o.Dir] = r
	return r
}
