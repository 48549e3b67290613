package ledger_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
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

// Two rotations within one tick of the clock (a coarse clock, or a fake
// one) must not rename the second file over the first.
func TestRotationSameStampKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return t0 }
	l, err := ledger.Open(dir, ledger.Options{MaxBytes: 600, MaxFiles: 100, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := l.Append(rec("p", "dev", i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	recs, _, err := ledger.Read(dir, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 20 {
		t.Fatalf("read %d records after rotations, want 20", len(recs))
	}
	for i, r := range recs {
		if r.Issue != int64(i) {
			t.Fatalf("record %d is issue %d: out of order", i, r.Issue)
		}
	}
}

// A rotation that fails (here: someone removed runs.jsonl) must not leave
// the ledger closed for the rest of the daemon's life.
func TestRotationFailureKeepsLedgerOpen(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(dir, ledger.Options{MaxBytes: 600})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 2 {
		if err := l.Append(rec("p", "dev", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "runs.jsonl")); err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 6; i++ {
		if err := l.Append(rec("p", "dev", i)); err != nil {
			t.Fatalf("append %d after a failed rotation: %v", i, err)
		}
	}
	recs, _, err := ledger.Read(dir, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[len(recs)-1].Issue != 5 {
		t.Fatalf("records after a failed rotation: %+v", recs)
	}
}

// A reader racing with rotations sees every record appended before it
// started, in order: the current file renamed between listing the rotated
// files and reading the current one must not drop its records.
func TestReadDuringRotation(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(dir, ledger.Options{MaxBytes: 300, MaxFiles: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const total = 200
	var appended atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := range total {
			if err := l.Append(rec("p", "dev", i)); err != nil {
				done <- err
				return
			}
			appended.Add(1)
		}
		done <- nil
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
		}
		before := appended.Load()
		recs, _, err := ledger.Read(dir, ledger.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(recs)) < before {
			t.Fatalf("read %d records while %d were already appended", len(recs), before)
		}
		for i, r := range recs {
			if r.Issue != int64(i) {
				t.Fatalf("record %d is issue %d: lost or out of order", i, r.Issue)
			}
		}
	}
}
