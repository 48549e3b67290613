package ledger_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func rec(project, role string, i int) ledger.Record {
	return ledger.Record{
		Start: t0.Add(time.Duration(i) * time.Minute), Wall: 30 * time.Second,
		Project: project, Role: role, Issue: int64(i),
		Reason: ledger.ReasonMerged, SessionID: "s", CostUSD: 0.25, Turns: 3,
	}
}

func TestAppendRead(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		role := "dev"
		if i%2 == 1 {
			role = "review"
		}
		if err := l.Append(rec("p", role, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	all, skipped, err := ledger.Read(dir, ledger.Filter{})
	if err != nil || skipped != 0 || len(all) != 4 {
		t.Fatalf("read: %d records, %d skipped, %v", len(all), skipped, err)
	}
	if got := all[0].End.Sub(all[0].Start); got != 30*time.Second {
		t.Errorf("end not derived from wall: %v", got)
	}
	dev, _, _ := ledger.Read(dir, ledger.Filter{Role: "dev", Since: t0.Add(90 * time.Second)})
	if len(dev) != 1 || dev[0].Issue != 2 {
		t.Errorf("filter: %+v", dev)
	}
}

func TestTornLineTolerated(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(rec("p", "dev", 1)); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	// Simulate a crash halfway through a write.
	f, err := os.OpenFile(filepath.Join(dir, "runs.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"run":"x","start":"2026-`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	recs, skipped, err := ledger.Read(dir, ledger.Filter{})
	if err != nil || len(recs) != 1 || skipped != 1 {
		t.Fatalf("after crash: %d records, %d skipped, %v", len(recs), skipped, err)
	}
	l, err = ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(rec("p", "dev", 2)); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	recs, skipped, err = ledger.Read(dir, ledger.Filter{})
	if err != nil || len(recs) != 2 || skipped != 1 {
		t.Fatalf("after reopen: %d records, %d skipped, %v", len(recs), skipped, err)
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	n := 0
	now := func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	l, err := ledger.Open(dir, ledger.Options{MaxBytes: 600, MaxFiles: 2, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := l.Append(rec("p", "dev", i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	rotated, _ := filepath.Glob(filepath.Join(dir, "runs-*.jsonl"))
	if len(rotated) != 2 {
		t.Fatalf("rotated files = %d, want 2", len(rotated))
	}
	recs, _, err := ledger.Read(dir, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || len(recs) >= 20 || recs[len(recs)-1].Issue != 19 {
		t.Fatalf("after rotation: %d records, last %+v", len(recs), recs[len(recs)-1])
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Issue != recs[i-1].Issue+1 {
			t.Fatalf("records out of order at %d", i)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := rec("p", "dev", 1)
	ok.End = ok.Start.Add(time.Second)
	cases := []struct {
		name string
		mod  func(*ledger.Record)
		bad  bool
	}{
		{"valid", func(*ledger.Record) {}, false},
		{"no project", func(r *ledger.Record) { r.Project = "" }, true},
		{"unknown reason", func(r *ledger.Record) { r.Reason = "meh" }, true},
		{"failure without code", func(r *ledger.Record) { r.Reason = ledger.ReasonBlocked }, true},
		{"failure unclassified", func(r *ledger.Record) { r.Reason = ledger.ReasonBlocked; r.Code = "unclassified" }, true},
		{"failure with code", func(r *ledger.Record) { r.Reason = ledger.ReasonBlocked; r.Code = ledger.CodeCIExhausted }, false},
		{"malformed code", func(r *ledger.Record) { r.Code = "CI..red" }, true},
		{"undotted code", func(r *ledger.Record) { r.Code = "red" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			err := r.Validate()
			if (err != nil) != tc.bad {
				t.Fatalf("Validate() = %v, want error %v", err, tc.bad)
			}
			if err != nil && !errors.Is(err, ledger.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
		})
	}
}
