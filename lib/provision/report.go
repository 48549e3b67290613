package provision

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Status is what a run did to one item.
type Status string

// Item statuses.
const (
	StatusCreated Status = "created"
	StatusUpdated Status = "updated"
	StatusPresent Status = "already present"
)

// Item is one line of the report: an object and what happened to it.
// Details never contain secrets.
type Item struct {
	Kind   string // bot, repo, labels, protection, ...
	Name   string
	Status Status
	Detail string
}

// Report lists every item a run looked at, in order.
type Report struct {
	Items []Item
}

func (r *Report) add(kind, name string, st Status, detail string) {
	r.Items = append(r.Items, Item{Kind: kind, Name: name, Status: st, Detail: detail})
}

// Changed reports whether anything was created or updated.
func (r *Report) Changed() bool {
	for _, it := range r.Items {
		if it.Status != StatusPresent {
			return true
		}
	}
	return false
}

// Find returns the item of kind and name.
func (r *Report) Find(kind, name string) (Item, bool) {
	for _, it := range r.Items {
		if it.Kind == kind && it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}

// WriteTable writes the report as an aligned table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSTATUS\tDETAIL")
	for _, it := range r.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", it.Kind, it.Name, it.Status, it.Detail)
	}
	return tw.Flush()
}
