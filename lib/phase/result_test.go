package phase_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/phase"
)

func TestParseResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		want    phase.Result
		wantErr string // substring of the error; "" for success
	}{
		{
			name: "too large",
			json: `{"status":"too_large","reason":"touches every package"}`,
			want: phase.Result{Status: phase.TooLarge, Reason: "touches every package"},
		},
		{
			name: "already done with evidence",
			json: `{"status":"already_done","reason":"exists","evidence":[{"file":"lib/x.go","line":12,"note":"does it"}]}`,
			want: phase.Result{Status: phase.AlreadyDone, Reason: "exists",
				Evidence: []phase.Evidence{{File: "lib/x.go", Line: 12, Note: "does it"}}},
		},
		{
			name: "unmet dependency",
			json: "  {\"status\": \"unmet_dependency\", \"dependency\": 41}\n\n",
			want: phase.Result{Status: phase.UnmetDependency, Dependency: 41},
		},
		{name: "unknown status", json: `{"status":"ready"}`, wantErr: `status "ready"`},
		{name: "missing status", json: `{"reason":"x"}`, wantErr: `status ""`},
		{name: "unknown field", json: `{"status":"too_large","reason":"x","blocked_by":"#3"}`, wantErr: "unknown field"},
		{name: "too large without reason", json: `{"status":"too_large"}`, wantErr: "needs a reason"},
		{name: "dependency missing", json: `{"status":"unmet_dependency","reason":"x"}`, wantErr: "positive dependency"},
		{name: "dependency negative", json: `{"status":"unmet_dependency","dependency":-2}`, wantErr: "positive dependency"},
		{name: "evidence without file", json: `{"status":"already_done","reason":"x","evidence":[{"note":"n"}]}`, wantErr: "evidence[0]"},
		{name: "evidence negative line", json: `{"status":"already_done","reason":"x","evidence":[{"file":"f","line":-1}]}`, wantErr: "negative line"},
		{name: "trailing object", json: `{"status":"too_large","reason":"x"}{}`, wantErr: "trailing data"},
		{name: "trailing text", json: `{"status":"too_large","reason":"x"} ok`, wantErr: "trailing data"},
		{name: "fenced json", json: "```json\n{\"status\":\"too_large\",\"reason\":\"x\"}\n```", wantErr: "decode"},
		{name: "null", json: `null`, wantErr: `status ""`},
		{name: "empty", json: ``, wantErr: "EOF"},
		{name: "wrong type", json: `{"status":"unmet_dependency","dependency":"41"}`, wantErr: "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := phase.ParseResult([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, phase.ErrInvalid) {
					t.Fatalf("error = %v, want ErrInvalid containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestWriteReadResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	want := phase.Result{
		Status: phase.AlreadyDone, Reason: "implemented in #12",
		Evidence: []phase.Evidence{{File: "a.go", Line: 3, Note: "the handler"}, {File: "b.go"}},
	}
	if err := phase.WriteResult(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := phase.ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip = %+v, want %+v", got, want)
	}

	if err := phase.WriteResult(filepath.Join(dir, "bad.json"), phase.Result{Status: "nope"}); !errors.Is(err, phase.ErrInvalid) {
		t.Errorf("WriteResult(invalid) = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("invalid result was written: %v", err)
	}
	if _, err := phase.ReadResult(filepath.Join(dir, "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadResult(absent) = %v, want ErrNotExist", err)
	}
	bad := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(bad, []byte(`{"status":"maybe"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := phase.ReadResult(bad); !errors.Is(err, phase.ErrInvalid) || !strings.Contains(err.Error(), bad) {
		t.Errorf("ReadResult(garbage) = %v, want ErrInvalid naming the file", err)
	}
}

func FuzzParseResult(f *testing.F) {
	for _, s := range []string{
		`{"status":"too_large","reason":"x"}`,
		`{"status":"unmet_dependency","dependency":3}`,
		`{"status":"already_done","reason":"r","evidence":[{"file":"f","line":1,"note":"n"}]}`,
		`{"status":"x"} {}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := phase.ParseResult(data)
		if err != nil {
			if !errors.Is(err, phase.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if verr := r.Validate(); verr != nil {
			t.Fatalf("ParseResult accepted an invalid result: %v", verr)
		}
	})
}
