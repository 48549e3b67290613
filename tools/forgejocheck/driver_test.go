package forgejocheck

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// The forge client is checked by what it does, not by what it declares:
// every exported method of forge.Client and forge.RepoClient that takes a
// context is called against a server that answers as Forgejo's API
// description says and records each request. A new method is called
// without anyone listing it, and one that makes no request fails the test
// until the driver is taught its arguments.

// answerMode is how the recording server answers.
type answerMode string

const (
	// full answers every route Forgejo has with all its fields.
	full answerMode = "full"
	// empty answers with empty lists and objects.
	empty answerMode = "empty"
	// notFound answers 404, to reach the paths that create what is missing.
	notFound answerMode = "not-found"
)

// recorder is the recording server's handler.
type recorder struct {
	spec *Spec
	mode answerMode

	mu     sync.Mutex
	caller string
	seen   map[string][]Request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1")
	rec.mu.Lock()
	rec.seen[rec.caller] = append(rec.seen[rec.caller], Request{
		Method: r.Method, Path: path, Query: r.URL.Query(),
		ContentType: r.Header.Get("Content-Type"), Body: body,
	})
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if rec.mode == notFound {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"message":"not found"}`)
		return
	}
	status, out, _ := rec.spec.Answer(r.Method, path, rec.mode == empty)
	if len(out) > 0 && out[0] == '[' {
		n := "1"
		if rec.mode == empty {
			n = "0"
		}
		w.Header().Set("X-Total-Count", n)
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// valueChoices are the values of the product's closed vocabularies the
// driver passes (any string would fail their validation); a method is
// called once per choice.
var valueChoices = map[reflect.Type][]any{
	reflect.TypeFor[forge.State]():       {forge.StateOpen, forge.StateClosed},
	reflect.TypeFor[forge.LabelName]():   {forge.LabelBacklog, forge.LabelInProgress},
	reflect.TypeFor[forge.ReviewEvent](): {forge.ReviewApprove, forge.ReviewRequestChanges, forge.ReviewComment},
	reflect.TypeFor[forge.CIState]():     {forge.CIFailure, forge.CISuccess},
	reflect.TypeFor[forge.Permission]():  {forge.PermWrite, forge.PermRead},
}

// methodArgs gives the arguments after the context of methods whose
// string arguments are a vocabulary of their own.
var methodArgs = map[string][][]any{
	"ProbeScope": {
		{forge.ScopeReadUser}, {forge.ScopeReadRepository}, {forge.ScopeWriteRepository},
		{forge.ScopeReadIssue}, {forge.ScopeWriteIssue},
	},
}

// fill returns a value of t with every field set: strings "x" (what the
// server answers too, so the client's checks of its own login or of a
// head SHA pass), numbers 7, one element per slice and map.
func fill(t reflect.Type, choice, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	if cs, ok := valueChoices[t]; ok {
		v.Set(reflect.ValueOf(cs[choice%len(cs)]))
		return v
	}
	if depth > 5 {
		return v
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(fill(t.Elem(), choice, depth+1))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(t)
		m.SetMapIndex(fill(t.Key(), choice, depth+1), fill(t.Elem(), choice, depth+1))
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		p.Elem().Set(fill(t.Elem(), choice, depth+1))
		v.Set(p)
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2024, 12, 19, 11, 20, 42, 0, time.UTC)))
			break
		}
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(fill(t.Field(i).Type, choice, depth+1))
			}
		}
	}
	return v
}

// argSets returns the argument lists (context excluded) to call m with.
func argSets(name string, m reflect.Type) [][]reflect.Value {
	if sets, ok := methodArgs[name]; ok {
		var out [][]reflect.Value
		for _, set := range sets {
			var args []reflect.Value
			for _, a := range set {
				args = append(args, reflect.ValueOf(a))
			}
			out = append(out, args)
		}
		return out
	}
	choices := 1
	for i := 2; i < m.NumIn(); i++ {
		if cs, ok := valueChoices[m.In(i)]; ok {
			choices = max(choices, len(cs))
		}
		if m.In(i).Kind() == reflect.Struct {
			for j := range m.In(i).NumField() {
				if cs, ok := valueChoices[m.In(i).Field(j).Type]; ok {
					choices = max(choices, len(cs))
				}
			}
		}
	}
	var out [][]reflect.Value
	for c := range choices {
		var args []reflect.Value
		for i := 2; i < m.NumIn(); i++ {
			if m.IsVariadic() && i == m.NumIn()-1 {
				args = append(args, fill(m.In(i).Elem(), c, 0))
				continue
			}
			args = append(args, fill(m.In(i), c, 0))
		}
		out = append(out, args)
	}
	return out
}

// placeholders turns the values the driver puts in the path of a route
// finding back into the placeholders the static analysis writes, so a
// finding has one key however it was found.
func placeholders(key string) string {
	if !strings.HasPrefix(key, "route ") {
		return key
	}
	segs := strings.Split(key, "/")
	for i, s := range segs {
		switch s {
		case "owner", "repo", "x", "7":
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}

var ctxType = reflect.TypeFor[context.Context]()

// exercise calls every context-taking method of the forge client in every
// answer mode and returns the requests each made, by method.
func exercise(t *testing.T, spec *Spec) map[string][]Request {
	t.Helper()
	all := map[string][]Request{}
	for _, mode := range []answerMode{full, empty, notFound} {
		rec := &recorder{spec: spec, mode: mode, seen: map[string][]Request{}}
		srv := httptest.NewServer(rec)
		for _, recvType := range []reflect.Type{reflect.TypeFor[*forge.Client](), reflect.TypeFor[*forge.RepoClient]()} {
			for i := range recvType.NumMethod() {
				m := recvType.Method(i)
				if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
					continue
				}
				name := strings.TrimPrefix(recvType.String(), "*forge.") + "." + m.Name
				for _, args := range argSets(m.Name, m.Type) {
					rec.mu.Lock()
					rec.caller = name
					rec.mu.Unlock()
					call(t, srv.URL, recvType, m, args)
				}
			}
		}
		srv.Close()
		for k, v := range rec.seen {
			all[k] = append(all[k], v...)
		}
	}
	return all
}

// call runs one method on a fresh client (nothing cached between calls).
func call(t *testing.T, url string, recvType reflect.Type, m reflect.Method, args []reflect.Value) {
	t.Helper()
	c, err := forge.New(forge.Options{
		URL: url, User: "x", Password: "secret", MaxRetries: -1,
		HTTPClient: &http.Client{Timeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	recv := reflect.ValueOf(c)
	if recvType == reflect.TypeFor[*forge.RepoClient]() {
		recv = reflect.ValueOf(c.Repo("owner", "repo"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked on the driver's arguments: %v", m.Name, p)
		}
	}()
	m.Func.Call(append([]reflect.Value{recv, reflect.ValueOf(ctx)}, args...))
}

// describe lists requests for a failure message.
func describe(reqs []Request) string {
	var lines []string
	for _, r := range reqs {
		q := ""
		if len(r.Query) > 0 {
			q = "?" + r.Query.Encode()
		}
		lines = append(lines, fmt.Sprintf("%s %s%s", r.Method, r.Path, q))
	}
	sort.Strings(lines)
	return strings.Join(dedupe(lines), "\n")
}
