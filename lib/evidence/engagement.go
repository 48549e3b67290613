package evidence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/edge"
)

// routeCount is one route's requests of one day.
type routeCount struct {
	requests, client4xx, server5xx int
	clients                        map[string]bool
}

// Engagement reads the edge's access log in r and counts, per day since
// since and per route of routes, the requests, the failed ones and the
// distinct clients. skipped counts the lines that were no access entry.
func Engagement(r io.Reader, routes []edge.Route, since time.Time) (days []Day, skipped int, err error) {
	counts := map[string]map[string]*routeCount{}
	skipped, err = edge.ReadAccessLog(r, func(h edge.Hit) {
		if h.Time.Before(since) {
			return
		}
		route := edge.RouteOf(routes, h.Path)
		if route == "" {
			route = "other"
		}
		date := DateOf(h.Time)
		if counts[date] == nil {
			counts[date] = map[string]*routeCount{}
		}
		c := counts[date][route]
		if c == nil {
			c = &routeCount{clients: map[string]bool{}}
			counts[date][route] = c
		}
		c.requests++
		switch {
		case h.Status >= 500:
			c.server5xx++
		case h.Status >= 400:
			c.client4xx++
		}
		if h.Client != "" {
			c.clients[h.Client] = true
		}
	})
	if err != nil {
		return nil, skipped, err
	}
	order := map[string]int{}
	for i, r := range routes {
		order[r.Name] = i
	}
	for date, byRoute := range counts {
		names := make([]string, 0, len(byRoute))
		for n := range byRoute {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool {
			oi, iok := order[names[i]]
			oj, jok := order[names[j]]
			if iok != jok {
				return iok
			}
			if oi != oj {
				return oi < oj
			}
			return names[i] < names[j]
		})
		var b strings.Builder
		b.WriteString("| route | requests | 4xx | 5xx | clients |\n|---|---|---|---|---|\n")
		for _, n := range names {
			c := byRoute[n]
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", n, c.requests, c.client4xx, c.server5xx, len(c.clients))
		}
		days = append(days, Day{Date: date, Body: b.String()})
	}
	return days, skipped, nil
}

// EngagementFromFile is Engagement of the access log at path; ok is false
// when there is no such file (the edge is off, or has served nothing).
func EngagementFromFile(path string, routes []edge.Route, since time.Time) (days []Day, skipped int, ok bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("evidence: %w", err)
	}
	defer f.Close()
	days, skipped, err = Engagement(f, routes, since)
	if err != nil {
		return nil, skipped, true, fmt.Errorf("evidence: %s: %w", path, err)
	}
	return days, skipped, true, nil
}
