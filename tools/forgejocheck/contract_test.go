package forgejocheck

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provision"
	"github.com/disinto/disinto/lib/webhook"
)

// root is the product's checkout.
const root = "../.."

var (
	srcOnce sync.Once
	srcDir  string
	srcErr  error
)

// forgejoSource returns the cached Forgejo source tree, fetching it once.
func forgejoSource(t *testing.T) string {
	t.Helper()
	srcOnce.Do(func() {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				srcErr = err
				return
			}
			cache = filepath.Join(home, ".cache")
		}
		srcDir, srcErr = Source(filepath.Join(cache, "disinto", "forgejo"))
	})
	if srcErr != nil {
		t.Fatalf("forgejo source: %v", srcErr)
	}
	return srcDir
}

func loadSpec(t *testing.T) *Spec {
	t.Helper()
	spec, err := LoadSpec(forgejoSource(t))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// sdkAliases names the API definition of SDK types whose name differs,
// and "" for SDK types that are no API object.
var sdkAliases = map[string]string{
	"Oauth2":   "OAuth2Application",
	"Status":   "CommitStatus",
	"Response": "",
}

// TestForgejoContract checks the product against Forgejo's source and
// fails on every difference allowlist.txt does not name.
func TestForgejoContract(t *testing.T) {
	t.Logf("checked against %s: %s@%s", Release, Module, ModuleVersion)
	var mu sync.Mutex
	var all []Finding
	add := func(fs []Finding) {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, fs...)
	}
	checks := map[string]func(*testing.T) []Finding{
		"api-requests": apiRequests, "api-fields": apiFields, "api-literals": apiLiterals,
		"cli": cliFlags, "webhook": webhookContract,
	}
	ran := 0
	for _, name := range sortedKeys(checks) {
		t.Run(name, func(t *testing.T) {
			ran++
			add(checks[name](t))
		})
	}
	if t.Failed() {
		return
	}
	f, err := os.Open("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	allowed, err := ParseAllowlist(f)
	if err != nil {
		t.Fatal(err)
	}
	unexpected, stale := Filter(allowed, ModuleVersion, all)
	for _, u := range unexpected {
		t.Errorf("%s\n\tfix the product, or add a line to allowlist.txt: %s | %s | <why the product may live with it>", u, u.Key, ModuleVersion)
	}
	// With some checks left out (go test -run), entries for them are
	// not stale.
	for _, s := range stale {
		if ran == len(checks) {
			t.Error(s)
		}
	}
}

// apiRequests records every request the forge client makes and checks
// each against Forgejo's API description.
func apiRequests(t *testing.T) []Finding {
	spec := loadSpec(t)
	seen := exercise(t, spec)
	var out []Finding
	for _, recvType := range []reflect.Type{reflect.TypeFor[*forge.Client](), reflect.TypeFor[*forge.RepoClient]()} {
		for i := range recvType.NumMethod() {
			m := recvType.Method(i)
			name := strings.TrimPrefix(recvType.String(), "*forge.") + "." + m.Name
			if m.Type.NumIn() >= 2 && m.Type.In(1) == ctxType && len(seen[name]) == 0 {
				t.Errorf("%s made no request with the driver's arguments: teach driver_test.go (valueChoices, methodArgs) how to call it", name)
			}
		}
	}
	for _, name := range sortedKeys(seen) {
		for _, r := range seen[name] {
			for _, f := range spec.CheckRequest(r) {
				f.Key = placeholders(f.Key)
				f.Detail += " (" + name + ")"
				out = append(out, f)
			}
		}
		t.Logf("%s:\n%s", name, describe(seen[name]))
	}
	return out
}

// apiFields checks the answer fields the forge client reads.
func apiFields(t *testing.T) []Finding {
	spec := loadSpec(t)
	ds, err := Decodes(root, "github.com/disinto/disinto/lib/forge")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) < 50 {
		t.Fatalf("only %d fields read found in lib/forge: the analysis is broken", len(ds))
	}
	return spec.CheckDecodes(ds, sdkAliases)
}

// apiLiterals checks the API paths written out in the product outside
// the forge client (the readiness probe, the chat's login): every string
// literal holding a whole path after /api/v1 must be a Forgejo route.
func apiLiterals(t *testing.T) []Finding {
	spec := loadSpec(t)
	var out []Finding
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "tools", "reference", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "forgetest") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n2 ast.Node) bool {
			lit, ok := n2.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			_, rest, ok := strings.Cut(s, "/api/v1/")
			if !ok || rest == "" || strings.HasSuffix(rest, "/") || strings.ContainsAny(rest, " %?") {
				return true
			}
			n++
			if _, ok := spec.Match("/" + rest); !ok {
				rel, _ := filepath.Rel(root, path)
				out = append(out, Finding{"route /" + rest, "Forgejo has no route /" + rest + " (" + rel + ")"})
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no /api/v1 path literal found outside lib/forge: the scan is broken")
	}
	return out
}

// cliFlags checks the `forgejo admin` commands the product runs against
// Forgejo's CLI, and the test image's stand-in against both.
func cliFlags(t *testing.T) []Finding {
	cmds, err := LoadCommands(forgejoSource(t))
	if err != nil {
		t.Fatal(err)
	}
	var invs []Invocation
	for _, dir := range []string{"docker-compose.yml", "docker", "deploy", "lib/provision", "cmd"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "docker/test/") {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			invs = append(invs, FindInvocations(string(b), rel)...)
			return nil
		})
	}
	if len(invs) == 0 {
		t.Fatal("no `forgejo admin` command found in the product: the scan is broken")
	}
	var out []Finding
	used := map[string]map[string]bool{}
	for _, inv := range invs {
		out = append(out, cmds.CheckInvocation(inv)...)
		path, flags := cmds.Parse(inv.Args)
		if used[path] == nil {
			used[path] = map[string]bool{}
		}
		for _, f := range flags {
			used[path][f] = true
		}
		t.Logf("%s: forgejo %s", inv.Where, strings.Join(inv.Args, " "))
	}
	script, err := os.ReadFile(filepath.Join(root, "docker/test/forge-entrypoint.sh"))
	if err != nil {
		t.Fatal(err)
	}
	standIn, err := ParseStandIn(string(script))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, cmds.CompareStandIn(standIn, used)...)
}

// payloadOf names Forgejo's payload struct (modules/structs) of each
// event type the receiver routes.
var payloadOf = map[string]string{
	"issues": "IssuePayload", "issue_assign": "IssuePayload", "issue_label": "IssuePayload",
	"issue_milestone": "IssuePayload", "issue_comment": "IssueCommentPayload",
	"pull_request": "PullRequestPayload", "pull_request_assign": "PullRequestPayload",
	"pull_request_label": "PullRequestPayload", "pull_request_milestone": "PullRequestPayload",
	"pull_request_comment": "IssueCommentPayload", "pull_request_review_approved": "PullRequestPayload",
	"pull_request_review_rejected": "PullRequestPayload", "pull_request_review_comment": "PullRequestPayload",
	"pull_request_sync": "PullRequestPayload", "pull_request_review_request": "PullRequestPayload",
	"push": "PushPayload",
}

// webhookContract checks the receiver against Forgejo's deliveries: the
// headers, the event types provisioning subscribes to, and the payload
// fields it reads.
func webhookContract(t *testing.T) []Finding {
	src := forgejoSource(t)
	headers, err := DeliveryHeaders(src)
	if err != nil {
		t.Fatal(err)
	}
	events, err := HookEventTypes(src)
	if err != nil {
		t.Fatal(err)
	}
	structs, err := LoadStructs(filepath.Join(src, "modules", "structs"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Finding
	// Every X-Forgejo- header the receiver reads is one Forgejo sends.
	sent := map[string]bool{}
	var forgejoHeaders []string
	for _, h := range headers {
		sent[h] = true
		if strings.HasPrefix(h, "X-Forgejo-") {
			forgejoHeaders = append(forgejoHeaders, h)
		}
	}
	t.Logf("Forgejo's delivery headers: %s", strings.Join(headers, ", "))
	receiver, err := os.ReadFile(filepath.Join(root, "lib/webhook/webhook.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"X-Forgejo-Event-Type", "X-Forgejo-Event", "X-Forgejo-Delivery", "X-Forgejo-Signature"} {
		if bytes.Contains(receiver, []byte(strconv.Quote(h))) && !sent[h] {
			out = append(out, Finding{"header " + h, "the receiver reads " + h + ", which Forgejo does not send"})
		}
	}
	out = append(out, deliver(t, forgejoHeaders)...)
	// Provisioning subscribes the webhook to these events.
	for _, e := range provision.WebhookEvents {
		if !events[e] {
			out = append(out, Finding{"webhook-event " + e, "provisioning subscribes the webhook to " + e + ", which Forgejo has no event for"})
		}
	}
	// The fields the receiver reads, in every payload it routes.
	product, err := LoadStructs(filepath.Join(root, "lib/webhook/webhook.go"))
	if err != nil {
		t.Fatal(err)
	}
	paths := product.JSONPaths("payload")
	if len(paths) == 0 {
		t.Fatal("lib/webhook has no payload struct: the check is broken")
	}
	var payloads []string
	for _, e := range sortedKeys(events) {
		if webhook.Roles(e) == nil {
			continue
		}
		p, ok := payloadOf[e]
		if !ok {
			t.Errorf("the receiver routes Forgejo's event %s: name its payload struct in payloadOf", e)
			continue
		}
		if structs[p] == nil {
			t.Errorf("Forgejo has no payload struct %s (event %s)", p, e)
			continue
		}
		payloads = append(payloads, p)
	}
	for _, path := range paths {
		field := strings.Join(path, ".")
		found := false
		for _, p := range dedupe(payloads) {
			missing := structs.Lacks(p, path)
			switch {
			case missing == "":
				found = true
			case field == "repository.full_name":
				// The one field every delivery must carry.
				out = append(out, Finding{"payload " + p + " " + field, "Forgejo's " + p + " has no " + missing})
			case missing != path[0]:
				out = append(out, Finding{"payload " + p + " " + field, "Forgejo's " + p + " has " + path[0] + " but no " + missing})
			}
		}
		if !found {
			out = append(out, Finding{"payload " + field, "no payload of an event the receiver routes has " + field})
		}
	}
	return out
}

// triggers records the receiver's triggers.
type triggers struct {
	mu  sync.Mutex
	got []string
}

func (tr *triggers) Trigger(project, role string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, project+"/"+role)
	return true
}

// deliver drives the receiver with a delivery carrying only Forgejo's own
// headers, signed as Forgejo signs (hex HMAC-SHA256 of the body).
func deliver(t *testing.T, forgejoHeaders []string) []Finding {
	secret := []byte("s3cret")
	tr := &triggers{}
	h, err := webhook.New(webhook.Options{
		Secret: secret, Projects: map[string][]string{"owner/repo": {"p"}},
		Trigger: tr, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"action":"label_updated","number":3,"issue":{"number":3},"repository":{"full_name":"owner/repo"}}`)
	values := map[string]string{
		"X-Forgejo-Event":      "issues",
		"X-Forgejo-Event-Type": "issue_label",
		"X-Forgejo-Delivery":   "0b5e7a6c-3f1d-4c59-9a62-0f4cb5d1f6a1",
		"X-Forgejo-Signature":  webhook.Sign(secret, body),
	}
	req := httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body))
	for _, name := range forgejoHeaders {
		v, ok := values[name]
		if !ok {
			t.Errorf("Forgejo sends a header %s the check does not know: look at it and give it a value here", name)
		}
		req.Header.Set(name, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || len(tr.got) == 0 {
		return []Finding{{"delivery", "the receiver answered " + strconv.Itoa(rec.Code) + " to a delivery with Forgejo's headers only, triggered " + strings.Join(tr.got, ",")}}
	}
	return nil
}
