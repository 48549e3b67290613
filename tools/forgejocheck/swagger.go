package forgejocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"mime/multipart"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Spec is Forgejo's API description: the routes under /api/v1, their
// parameters and the schemas of their bodies and answers.
type Spec struct {
	Paths       map[string]map[string]*Operation `json:"paths"`
	Definitions map[string]*Schema               `json:"definitions"`
	Responses   map[string]*Response             `json:"responses"`
}

// Operation is one method of one route.
type Operation struct {
	Parameters []Parameter          `json:"parameters"`
	Responses  map[string]*Response `json:"responses"`
}

// Parameter is a path, query, body or form parameter of an operation.
type Parameter struct {
	Name   string  `json:"name"`
	In     string  `json:"in"`
	Schema *Schema `json:"schema"`
}

// Response is an answer of an operation, possibly a reference to one of
// the shared responses.
type Response struct {
	Ref    string  `json:"$ref"`
	Schema *Schema `json:"schema"`
}

// Schema is the part of a JSON schema the checks use.
type Schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Properties           map[string]*Schema `json:"properties"`
	Items                *Schema            `json:"items"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
}

// Request is one HTTP request the client makes, relative to /api/v1.
type Request struct {
	Method      string
	Path        string // escaped, as on the wire
	Query       url.Values
	ContentType string
	Body        []byte
}

// Finding is one difference between the product and Forgejo. Key is
// stable (it is what allowlist.txt names); Detail explains it.
type Finding struct {
	Key, Detail string
}

func (f Finding) String() string { return f.Key + ": " + f.Detail }

// templateAction matches the Go template actions of the swagger template
// (the app version and sub-URL), which are not JSON.
var templateAction = regexp.MustCompile(`\{\{[^}]*\}\}`)

// LoadSpec reads templates/swagger/v1_json.tmpl of a Forgejo source tree.
func LoadSpec(src string) (*Spec, error) {
	path := filepath.Join(src, "templates", "swagger", "v1_json.tmpl")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(templateAction.ReplaceAll(b, nil))
}

// ParseSpec decodes a swagger 2.0 document.
func ParseSpec(b []byte) (*Spec, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("swagger: %w", err)
	}
	if len(s.Paths) == 0 {
		return nil, fmt.Errorf("swagger: no paths")
	}
	return &s, nil
}

// Match finds the route template serving path: segments must be equal or
// the template's segment a {parameter}; of several matches the one with
// the most literal segments wins (/issues/comments/{id} over
// /issues/{index}/...).
func (s *Spec) Match(path string) (string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLit := "", -1
	for tmpl := range s.Paths {
		ts := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		lit := 0
		ok := true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
			case t == segs[i]:
				lit++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && (lit > bestLit || lit == bestLit && tmpl < best) {
			best, bestLit = tmpl, lit
		}
	}
	return best, bestLit >= 0
}

// Operation returns the route template and operation serving method and
// path, or a finding saying why there is none.
func (s *Spec) Operation(method, path string) (string, *Operation, *Finding) {
	tmpl, ok := s.Match(path)
	if !ok {
		return "", nil, &Finding{"route " + method + " " + path, "Forgejo has no such route"}
	}
	op := s.Paths[tmpl][strings.ToLower(method)]
	if op == nil {
		return tmpl, nil, &Finding{"route " + method + " " + tmpl, "Forgejo serves " + tmpl + " but not " + method}
	}
	return tmpl, op, nil
}

// CheckRequest reports what of r Forgejo does not take: its route and
// method, its query parameters, the fields of its JSON body and the
// fields of its form.
func (s *Spec) CheckRequest(r Request) []Finding {
	tmpl, op, f := s.Operation(r.Method, r.Path)
	if f != nil {
		return []Finding{*f}
	}
	var out []Finding
	params := map[string]*Parameter{}
	for i := range op.Parameters {
		p := &op.Parameters[i]
		params[p.In+" "+p.Name] = p
	}
	for _, k := range sortedKeys(r.Query) {
		if params["query "+k] == nil {
			out = append(out, Finding{"query " + r.Method + " " + tmpl + " " + k, "Forgejo's " + r.Method + " " + tmpl + " has no query parameter " + k})
		}
	}
	if len(r.Body) == 0 {
		return out
	}
	mt, mp, _ := mime.ParseMediaType(r.ContentType)
	switch {
	case mt == "application/json":
		var body any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return append(out, Finding{"body " + r.Method + " " + tmpl, "not JSON: " + err.Error()})
		}
		var schema *Schema
		for _, p := range op.Parameters {
			if p.In == "body" {
				schema = p.Schema
			}
		}
		if schema == nil {
			return append(out, Finding{"body " + r.Method + " " + tmpl, "Forgejo's " + r.Method + " " + tmpl + " takes no JSON body"})
		}
		for _, field := range s.unknownFields(schema, body, "") {
			out = append(out, Finding{"body " + r.Method + " " + tmpl + " " + field, "Forgejo's " + r.Method + " " + tmpl + " body has no field " + field})
		}
	case mt == "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(r.Body), mp["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				break
			}
			if params["formData "+part.FormName()] == nil {
				out = append(out, Finding{"form " + r.Method + " " + tmpl + " " + part.FormName(), "Forgejo's " + r.Method + " " + tmpl + " has no form field " + part.FormName()})
			}
		}
	}
	return out
}

// resolve follows a schema's $ref into the definitions.
func (s *Spec) resolve(sc *Schema) *Schema {
	for i := 0; sc != nil && sc.Ref != "" && i < 10; i++ {
		sc = s.Definitions[strings.TrimPrefix(sc.Ref, "#/definitions/")]
	}
	return sc
}

// ResponseSchema returns the schema of op's success answer (nil when it
// has no body) and its status.
func (s *Spec) ResponseSchema(op *Operation) (*Schema, int) {
	for _, code := range []string{"200", "201", "204"} {
		r := op.Responses[code]
		if r == nil {
			continue
		}
		if r.Ref != "" {
			r = s.Responses[strings.TrimPrefix(r.Ref, "#/responses/")]
		}
		status := 200
		_, _ = fmt.Sscan(code, &status)
		if r == nil {
			return nil, status
		}
		return s.resolve(r.Schema), status
	}
	return nil, 200
}

// unknownFields lists the dotted paths of v's object keys that sc lacks.
func (s *Spec) unknownFields(sc *Schema, v any, prefix string) []string {
	sc = s.resolve(sc)
	if sc == nil {
		return nil
	}
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if len(sc.Properties) == 0 {
			// A free-form object (a map of settings): any key goes.
			return nil
		}
		for _, k := range sortedKeys(v) {
			p, ok := sc.Properties[k]
			if !ok && !zero(v[k]) {
				out = append(out, prefix+k)
				continue
			}
			if !ok {
				continue
			}
			out = append(out, s.unknownFields(p, v[k], prefix+k+".")...)
		}
	case []any:
		for _, e := range v {
			out = append(out, s.unknownFields(sc.Items, e, prefix)...)
		}
	}
	return dedupe(out)
}

// Lacks returns the first segment of the dotted field path that the
// schema lacks ("" when it has them all). Arrays are crossed implicitly.
func (s *Spec) Lacks(sc *Schema, path []string) string {
	for i, name := range path {
		sc = s.resolve(sc)
		for sc != nil && sc.Type == "array" {
			sc = s.resolve(sc.Items)
		}
		if sc == nil {
			return strings.Join(path[:i+1], ".")
		}
		if len(sc.Properties) == 0 && sc.AdditionalProperties != nil {
			return ""
		}
		next, ok := sc.Properties[name]
		if !ok {
			return strings.Join(path[:i+1], ".")
		}
		sc = next
	}
	return ""
}

// Answer synthesizes Forgejo's success answer to method and path from its
// schema: every field present, one element per array. With empty, arrays
// are empty and objects have no fields. ok is false when Forgejo has no
// such route.
func (s *Spec) Answer(method, path string, empty bool) (status int, body []byte, ok bool) {
	_, op, f := s.Operation(method, path)
	if f != nil {
		return 404, []byte(`{"message":"not found"}`), false
	}
	sc, status := s.ResponseSchema(op)
	if sc == nil || status == 204 {
		return status, nil, true
	}
	b, _ := json.Marshal(s.example(sc, 0, empty))
	return status, b, true
}

// example builds a value of schema sc. Strings are "x" (timestamps valid
// RFC 3339), numbers 7, booleans false.
func (s *Spec) example(sc *Schema, depth int, empty bool) any {
	sc = s.resolve(sc)
	if sc == nil || depth > 6 {
		return nil
	}
	switch sc.Type {
	case "array":
		if empty {
			return []any{}
		}
		return []any{s.example(sc.Items, depth+1, empty)}
	case "string":
		if sc.Format == "date-time" {
			return "2024-12-19T11:20:42Z"
		}
		return "x"
	case "integer", "number":
		return 7
	case "boolean":
		return false
	}
	obj := map[string]any{}
	if !empty {
		for k, p := range sc.Properties {
			obj[k] = s.example(p, depth+1, empty)
		}
	}
	return obj
}

// zero reports whether a JSON value is its type's zero (null, false, 0,
// "", [] or {}): a field the SDK always sends, which a forge without it
// ignores, and which asks for nothing beyond the default.
func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
