package ledger_test

import (
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/redact"
)

// TestAppendRedacts writes a secret holding ", \ and % into every
// free-text field of a record (found by reflection, so a field added later
// is covered too) and checks the file holds it in no form.
func TestAppendRedacts(t *testing.T) {
	const secret = `s3"cr\et%t0ken`
	dir := t.TempDir()
	l, err := ledger.Open(dir, ledger.Options{Redactor: redact.New(secret)})
	if err != nil {
		t.Fatal(err)
	}
	r := rec("p", "dev", 1)
	r.Reason, r.Code = ledger.ReasonEngineError, ledger.CodeEngineTick
	v := reflect.ValueOf(&r).Elem()
	var fields []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.String || f.Type() == reflect.TypeOf(r.Reason) || f.Type() == reflect.TypeOf(r.Code) {
			continue
		}
		fields = append(fields, v.Type().Field(i).Name)
		f.SetString("x " + secret + " y")
	}
	if len(fields) < 5 {
		t.Fatalf("only %v are free text", fields)
	}
	r.Detail += " GET /user?t=" + url.QueryEscape(secret)
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "t0ken") {
		t.Errorf("the ledger holds the secret:\n%s", data)
	}
	got, skipped, err := ledger.Read(dir, ledger.Filter{})
	if err != nil || skipped != 0 || len(got) != 1 {
		t.Fatalf("read: %v, %d skipped, %v", got, skipped, err)
	}
	for _, name := range fields {
		if s := reflect.ValueOf(got[0]).FieldByName(name).String(); !strings.Contains(s, redact.Mask) {
			t.Errorf("%s = %q, not masked", name, s)
		}
	}
}
