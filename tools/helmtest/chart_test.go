package helmtest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the chart renders")

const (
	chartDir  = "../../deploy/helm/disinto"
	namespace = "factory"
)

// required are the values every install must give: the forge and where
// it is, the project files and the secrets. With them alone the chart
// renders its defaults.
func required() map[string]any {
	return mustValues(`
forge:
  url: https://forge.example.org
  egress:
    cidrs: [203.0.113.10/32]
projects:
  demo.toml: |
    name = "demo"
    repo = "disinto-admin/demo"
secrets:
  agents:
    values:
      FORGE_TOKEN: dev-token
      FORGE_REVIEW_TOKEN: review-token
      DISINTO_STATUS_TOKEN: status-token-0123456789
  model:
    values:
      ANTHROPIC_API_KEY: sk-ant-test
  gatewayToken:
    value: gateway-token-0123456789
`)
}

// cases are the value sets rendered and checked against golden files.
var cases = []struct {
	name string
	vals func() map[string]any
	want want
}{
	{"defaults", required, want{replicas: 1, gateway: true}},
	{"replicas-5", func() map[string]any {
		return merge(required(), mustValues(`agents: {replicas: 5}`))
	}, want{replicas: 5, gateway: true}},
	{"existing-secrets", func() map[string]any {
		return merge(required(), mustValues(`
projects: null
projectsConfigMap: my-projects
secrets:
  agents: {existingSecret: my-agents, values: null}
  model: {existingSecret: my-model, values: null}
  gatewayToken: {existingSecret: my-gateway-token, key: token, value: null}
`))
	}, want{replicas: 1, gateway: true}},
	{"external-gateway", func() map[string]any {
		return merge(required(), mustValues(`
agents:
  replicas: 3
  env: {AGENT_ROLES: "review,dev", POLL_INTERVAL: 2m}
gateway:
  enabled: false
  externalURL: http://gateway.models.svc:8090
  external:
    cidrs: [10.20.0.0/16]
secrets:
  model: {values: null}
networkPolicy:
  extraEgress:
    - to: [{ipBlock: {cidr: 198.51.100.0/24}}]
      ports: [{port: 443, protocol: TCP}]
`))
	}, want{replicas: 3, extraEgress: 1}},
	{"in-cluster-forge", func() map[string]any {
		return merge(required(), mustValues(`
forge:
  url: http://forgejo.forgejo.svc:3000
  egress:
    cidrs: null
    peers:
      - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: forgejo}}
        podSelector: {matchLabels: {app.kubernetes.io/name: forgejo}}
    ports: [{port: 3000, protocol: TCP}]
networkPolicy:
  statusAcrossReplicas: false
  webhookFrom:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: forgejo}}
agents:
  webhookURL: http://disinto-agents-0.disinto-agents.factory.svc:8080/hooks/forgejo
`))
	}, want{replicas: 1, gateway: true, isolated: true}},
}

func TestChart(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			manifest, err := Render(chartDir, namespace, c.vals())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", c.name+".yaml"), manifest)
			check(t, manifest, c.want)
		})
	}
}

// want is what a render's values ask for.
type want struct {
	// replicas is the agents' count.
	replicas int
	// gateway: the chart runs the gateway (else an external one).
	gateway bool
	// isolated: no replica may reach another (statusAcrossReplicas false).
	isolated bool
	// extraEgress is the number of networkPolicy.extraEgress rules.
	extraEgress int
}

// check decodes a render and holds it to every rule of the chart.
func check(t testing.TB, manifest string, w want) {
	t.Helper()
	objs, err := Decode(manifest)
	if err != nil {
		t.Fatal(err)
	}
	r := index(t, objs)
	checkAgents(t, r, w.replicas, w.gateway)
	checkPods(t, r)
	checkSelectors(t, r)
	checkSecrets(t, r)
	if w.gateway {
		checkGateway(t, r)
	} else if len(r.deployments) != 0 || r.service("disinto-gateway") != nil {
		t.Error("gateway.enabled false still renders the gateway")
	}
	checkNetworkPolicy(t, r, w)
}

// TestChecksBite: values that break a rule the chart keeps (an escalation,
// a capability, a probe, a non-root user, the network policy) make the
// checks fail, so that a passing run means the rules hold.
func TestChecksBite(t *testing.T) {
	for _, c := range []struct{ name, values string }{
		{"privilege escalation", `agents: {securityContext: {allowPrivilegeEscalation: true}}`},
		{"capabilities kept", `agents: {securityContext: {capabilities: {drop: null}}}`},
		{"capability added", `agents: {securityContext: {capabilities: {add: [CHOWN, DAC_OVERRIDE, FOWNER, KILL, NET_ADMIN, SETGID, SETUID, SYS_PTRACE]}}}`},
		{"gateway firewall capability", `gateway: {securityContext: {capabilities: {add: [NET_ADMIN]}}}`},
		{"gateway capability", `gateway: {securityContext: {capabilities: {add: [NET_BIND_SERVICE]}}}`},
		{"gateway as root", `gateway: {podSecurityContext: {runAsNonRoot: false, runAsUser: 0}}`},
		{"privileged", `gateway: {securityContext: {privileged: true}}`},
		{"readiness on healthz", `agents: {readinessProbe: {httpGet: {path: /healthz}}}`},
		{"gateway liveness elsewhere", `gateway: {livenessProbe: {httpGet: {path: /}}}`},
		{"no network policy", `networkPolicy: {enabled: false}`},
		{"forge anywhere", `forge: {egress: {cidrs: [0.0.0.0/0]}}`},
		{"gateway reaches the cluster", `networkPolicy: {modelAPI: {cidrs: [{cidr: 0.0.0.0/0}]}}`},
		{"dns anywhere", `networkPolicy: {dns: {ports: null}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			manifest, err := Render(chartDir, namespace, merge(required(), mustValues(c.values)))
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				check(rec, manifest, want{replicas: 1, gateway: true})
			}()
			<-done
			if len(rec.errs) == 0 {
				t.Error("the checks pass")
			}
			t.Log(strings.Join(rec.errs, "; "))
		})
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Error(args ...any) {
	r.errs = append(r.errs, fmt.Sprint(args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// TestRequired: each required value missing, and each value the schema
// refuses, fails the render with a line naming it.
func TestRequired(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		{"forge url", `forge: {url: ""}`, "forge.url is required"},
		{"forge egress", `forge: {egress: {cidrs: null}}`, "forge.egress.cidrs or forge.egress.peers is required"},
		{"projects", `projects: null`, "projects or projectsConfigMap is required"},
		{"status token", `secrets: {agents: {values: {DISINTO_STATUS_TOKEN: short}}}`, "DISINTO_STATUS_TOKEN is required"},
		{"gateway token", `secrets: {gatewayToken: {value: short}}`, "secrets.gatewayToken.value is required"},
		{"model credential", `secrets: {model: {values: null}}`, "ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN"},
		{"external gateway url", `gateway: {enabled: false, external: {cidrs: [10.0.0.0/8]}}`, "gateway.externalURL is required"},
		{"external gateway cidrs", `gateway: {enabled: false, externalURL: "http://gw:8090"}`, "gateway.external.cidrs is required"},
		// The schema (values.schema.json): a count below one, a value of
		// the wrong type, a misspelt key.
		{"replicas", `agents: {replicas: 0}`, "/agents/replicas"},
		{"replicas type", `agents: {replicas: three}`, "/agents/replicas"},
		{"misspelt key", `agents: {replica: 3}`, "'replica' not allowed"},
		{"policy switch type", `networkPolicy: {enabled: "yes"}`, "/networkPolicy/enabled"},
		{"forge url scheme", `forge: {url: forge.example.org}`, "/forge/url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(chartDir, namespace, merge(required(), mustValues(c.values)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestDecodeStrict proves the decoding rejects what the API would not
// take: a field the type lacks, a value of the wrong type, a duplicate key
// and a kind the chart may not render.
func TestDecodeStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: eighty}]}\n",
		"duplicate key": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"unknown kind":  "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"bad quantity":  "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: x}\nspec: {resources: {requests: {storage: lots}}}\n",
	} {
		if _, err := Decode("---\n" + doc); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	objs, err := Decode("---\n# Source: x\napiVersion: v1\nkind: Service\nmetadata: {name: x}\n")
	if err != nil || len(objs) != 1 || objs[0].Source != "x" {
		t.Errorf("a valid Service: %v, %v", objs, err)
	}
}

// rendered is a render's objects by kind.
type rendered struct {
	statefulSets []*appsv1.StatefulSet
	deployments  []*appsv1.Deployment
	services     []*corev1.Service
	secrets      []*corev1.Secret
	configMaps   []*corev1.ConfigMap
	policies     []*networkingv1.NetworkPolicy
}

func index(t testing.TB, objs []Object) *rendered {
	t.Helper()
	r := &rendered{}
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *appsv1.StatefulSet:
			r.statefulSets = append(r.statefulSets, v)
		case *appsv1.Deployment:
			r.deployments = append(r.deployments, v)
		case *corev1.Service:
			r.services = append(r.services, v)
		case *corev1.Secret:
			r.secrets = append(r.secrets, v)
		case *corev1.ConfigMap:
			r.configMaps = append(r.configMaps, v)
		case *networkingv1.NetworkPolicy:
			r.policies = append(r.policies, v)
		}
		if o.Name == "" {
			t.Errorf("%s: %s without a name", o.Source, o.Kind)
		}
	}
	return r
}

func (r *rendered) service(name string) *corev1.Service {
	for _, s := range r.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (r *rendered) policy(name string) *networkingv1.NetworkPolicy {
	for _, p := range r.policies {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// pods are the pod templates of every workload, by workload name.
func (r *rendered) pods() map[string]*corev1.PodTemplateSpec {
	m := map[string]*corev1.PodTemplateSpec{}
	for _, s := range r.statefulSets {
		m[s.Name] = &s.Spec.Template
	}
	for _, d := range r.deployments {
		m[d.Name] = &d.Spec.Template
	}
	return m
}

func checkAgents(t testing.TB, r *rendered, replicas int, gateway bool) {
	t.Helper()
	if len(r.statefulSets) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(r.statefulSets))
	}
	ss := r.statefulSets[0]
	if ss.Spec.Replicas == nil || int(*ss.Spec.Replicas) != replicas {
		t.Errorf("replicas %v, want %d", ss.Spec.Replicas, replicas)
	}
	headless := r.service(ss.Spec.ServiceName)
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("the StatefulSet's service %q is not a headless Service of the chart", ss.Spec.ServiceName)
	}
	c := container(t, &ss.Spec.Template, "agents")
	env := envOf(c)
	slot := env["DISINTO_REPLICA_SLOT"]
	if slot == nil || slot.ValueFrom == nil || slot.ValueFrom.FieldRef == nil ||
		slot.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("DISINTO_REPLICA_SLOT is not the pod's name: %+v", slot)
	}
	if n := env["DISINTO_REPLICAS"]; n == nil || n.Value != itoa(replicas) {
		t.Errorf("DISINTO_REPLICAS %+v, want %d", n, replicas)
	}
	if v := env["DISINTO_GATEWAY_URL"]; v == nil || v.Value == "" {
		t.Error("no DISINTO_GATEWAY_URL: the sessions would reach the model directly")
	} else if gateway && v.Value != "http://disinto-gateway."+namespace+".svc:8090" {
		t.Errorf("DISINTO_GATEWAY_URL %q is not the chart's gateway", v.Value)
	}
	if v := env["DISINTO_GATEWAY_TOKEN"]; v == nil || v.ValueFrom == nil || v.ValueFrom.SecretKeyRef == nil {
		t.Error("DISINTO_GATEWAY_TOKEN does not come from a Secret")
	}
	if v := env["DISINTO_ENV_FILE"]; v == nil || v.Value != "" {
		t.Error("DISINTO_ENV_FILE is not emptied: the doctor would block on the image's missing env file")
	}
	// Each replica's own data volume.
	if len(ss.Spec.VolumeClaimTemplates) != 1 || ss.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Fatalf("volume claim templates %v, want one named data", ss.Spec.VolumeClaimTemplates)
	}
	if !mounted(c, "data", "/home/agent/data") {
		t.Error("the data claim is not mounted at /home/agent/data")
	}
	for _, v := range ss.Spec.Template.Spec.Volumes {
		if v.Name == "data" {
			t.Error("a pod volume shadows the data claim template")
		}
	}
	probe(t, "agents startup", c.StartupProbe, "/healthz", "webhook")
	probe(t, "agents liveness", c.LivenessProbe, "/healthz", "webhook")
	probe(t, "agents readiness", c.ReadinessProbe, "/readyz", "webhook")
	if port(c, "webhook") != 8080 || port(c, "status") != 8081 {
		t.Errorf("ports %v, want webhook 8080 and status 8081", c.Ports)
	}
	// The agents run as root to give sessions uids of their own and keep
	// those uids off the network (NET_ADMIN, for the firewall in the pod's
	// own network namespace), with the capabilities that takes and nothing
	// else.
	caps := c.SecurityContext.Capabilities
	add := []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "NET_ADMIN", "SETGID", "SETUID"}
	if caps == nil || !slices.Equal(caps.Add, add) {
		t.Errorf("agents add %v, want %v", caps, add)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("the agents have no memory request or limit")
	}
}

func checkGateway(t testing.TB, r *rendered) {
	t.Helper()
	if len(r.deployments) != 1 {
		t.Fatalf("%d Deployments, want the gateway's", len(r.deployments))
	}
	d := r.deployments[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Error("the gateway is not one pod, recreated: budgets would not hold across two")
	}
	c := container(t, &d.Spec.Template, "gateway")
	if len(c.Args) != 1 || c.Args[0] != "gateway" {
		t.Errorf("gateway args %v", c.Args)
	}
	probe(t, "gateway liveness", c.LivenessProbe, "/healthz", "gateway")
	probe(t, "gateway readiness", c.ReadinessProbe, "/healthz", "gateway")
	ps := d.Spec.Template.Spec.SecurityContext
	sc := c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Error("the gateway does not run as a non-root user")
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Add) != 0 {
		t.Errorf("the gateway adds capabilities %v", sc.Capabilities)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("the gateway's root filesystem is writable")
	}
	svc := r.service("disinto-gateway")
	if svc == nil {
		t.Fatal("no gateway Service")
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || len(svc.Spec.ExternalIPs) != 0 {
		t.Errorf("the gateway Service is %s: its port would be reachable outside the cluster", svc.Spec.Type)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8090 || svc.Spec.Ports[0].NodePort != 0 {
		t.Errorf("gateway ports %v", svc.Spec.Ports)
	}
	// The model credential reaches the gateway only.
	model := ""
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil {
			model = e.SecretRef.Name
		}
	}
	if model == "" {
		t.Fatal("the gateway reads no model credential")
	}
	for name, p := range r.pods() {
		if name == d.Name {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil && e.SecretRef.Name == model {
					t.Errorf("%s reads the model credential", name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == model {
					t.Errorf("%s reads the model credential", name)
				}
			}
		}
	}
}

// checkPods holds every pod to the chart's security rules: no privilege
// escalation, every capability dropped, no host namespace or path, no
// service account token.
func checkPods(t testing.TB, r *rendered) {
	t.Helper()
	for name, p := range r.pods() {
		s := p.Spec
		if s.HostNetwork || s.HostPID || s.HostIPC {
			t.Errorf("%s shares a host namespace", name)
		}
		if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
			t.Errorf("%s mounts a service account token", name)
		}
		if s.SecurityContext == nil || s.SecurityContext.SeccompProfile == nil ||
			s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s has no RuntimeDefault seccomp profile", name)
		}
		for _, v := range s.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s mounts host path %s", name, v.HostPath.Path)
			}
		}
		for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
			sc := c.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("%s/%s has no security context", name, c.Name)
				continue
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("%s/%s allows privilege escalation", name, c.Name)
			case sc.Privileged != nil && *sc.Privileged:
				t.Errorf("%s/%s is privileged", name, c.Name)
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
				t.Errorf("%s/%s does not drop every capability: %v", name, c.Name, sc.Capabilities)
			}
			for _, a := range sc.Capabilities.Add {
				if a == "ALL" || a == "SYS_ADMIN" || a == "NET_RAW" || a == "SYS_PTRACE" || a == "SYS_MODULE" {
					t.Errorf("%s/%s adds %s", name, c.Name, a)
				}
			}
			if c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("%s/%s requests no CPU", name, c.Name)
			}
		}
	}
}

// checkSelectors: every Service and NetworkPolicy selects the pods of a
// workload of the chart, and every workload's selector its own pods.
func checkSelectors(t testing.TB, r *rendered) {
	t.Helper()
	pods := r.pods()
	selects := func(sel map[string]string) bool {
		for _, p := range pods {
			if matches(sel, p.Labels) {
				return true
			}
		}
		return false
	}
	for _, s := range r.statefulSets {
		if !matches(s.Spec.Selector.MatchLabels, s.Spec.Template.Labels) {
			t.Errorf("StatefulSet %s does not select its pods", s.Name)
		}
	}
	for _, d := range r.deployments {
		if !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("Deployment %s does not select its pods", d.Name)
		}
	}
	for _, s := range r.services {
		if !selects(s.Spec.Selector) {
			t.Errorf("Service %s selects no pod of the chart", s.Name)
		}
		for _, p := range s.Spec.Ports {
			if p.TargetPort.StrVal == "" {
				continue
			}
			found := false
			for _, pod := range pods {
				if matches(s.Spec.Selector, pod.Labels) {
					for _, c := range pod.Spec.Containers {
						found = found || port(&c, p.TargetPort.StrVal) != 0
					}
				}
			}
			if !found {
				t.Errorf("Service %s targets port %s, which its pods do not name", s.Name, p.TargetPort.StrVal)
			}
		}
	}
	for _, p := range r.policies {
		if !selects(p.Spec.PodSelector.MatchLabels) {
			t.Errorf("NetworkPolicy %s selects no pod of the chart", p.Name)
		}
	}
}

// checkSecrets: every Secret the pods read is one the chart renders or one
// the values name; a rendered Secret has no empty value.
func checkSecrets(t testing.TB, r *rendered) {
	t.Helper()
	have := map[string]*corev1.Secret{}
	for _, s := range r.secrets {
		have[s.Name] = s
		for k, v := range s.StringData {
			if v == "" {
				t.Errorf("Secret %s: %s is empty", s.Name, k)
			}
		}
	}
	for name, p := range r.pods() {
		for _, c := range p.Spec.Containers {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil && have[e.SecretRef.Name] == nil && !strings.HasPrefix(e.SecretRef.Name, "my-") {
					t.Errorf("%s reads Secret %s, which is neither rendered nor given", name, e.SecretRef.Name)
				}
			}
			for _, e := range c.Env {
				ref := e.ValueFrom
				if ref == nil || ref.SecretKeyRef == nil {
					continue
				}
				s := have[ref.SecretKeyRef.Name]
				switch {
				case s == nil && !strings.HasPrefix(ref.SecretKeyRef.Name, "my-"):
					t.Errorf("%s reads Secret %s, which is neither rendered nor given", name, ref.SecretKeyRef.Name)
				case s != nil && s.StringData[ref.SecretKeyRef.Key] == "":
					t.Errorf("%s reads %s from Secret %s, which has no such key", name, ref.SecretKeyRef.Key, s.Name)
				}
			}
		}
	}
}

// checkNetworkPolicy: the agents reach DNS, the gateway and the forge and
// nothing else; the gateway is reached from the agents only and reaches
// DNS and the model API only.
func checkNetworkPolicy(t testing.TB, r *rendered, w want) {
	gateway, isolated := w.gateway, w.isolated
	t.Helper()
	agents := r.policy("disinto-agents")
	if agents == nil {
		t.Fatal("no NetworkPolicy for the agents")
	}
	hasTypes(t, agents)
	agentLabels := r.statefulSets[0].Spec.Template.Labels
	if !matches(agents.Spec.PodSelector.MatchLabels, agentLabels) {
		t.Error("the agents' NetworkPolicy does not select the agents")
	}
	var gwLabels map[string]string
	if gateway {
		gwLabels = r.deployments[0].Spec.Template.Labels
	}
	var dns, gw, forge, status int
	egress := agents.Spec.Egress
	if len(egress) < w.extraEgress {
		t.Fatalf("agents egress %+v, want %d rules of extraEgress at its end", egress, w.extraEgress)
	}
	// The operator's own rules (extraEgress) come last, as given.
	egress = egress[:len(egress)-w.extraEgress]
	for i, rule := range egress {
		if len(rule.To) == 0 || len(rule.Ports) == 0 {
			t.Errorf("agents egress rule %d allows every destination or port: %+v", i, rule)
			continue
		}
		switch {
		case allPorts(rule, 53):
			dns++
		case len(rule.To) == 1 && rule.To[0].PodSelector != nil && rule.To[0].NamespaceSelector == nil &&
			matches(rule.To[0].PodSelector.MatchLabels, agentLabels) && !matches(rule.To[0].PodSelector.MatchLabels, gwLabels) &&
			len(rule.Ports) == 1 && rule.Ports[0].Port != nil && rule.Ports[0].Port.StrVal == "status":
			status++
		case gateway && len(rule.To) == 1 && rule.To[0].PodSelector != nil && rule.To[0].IPBlock == nil &&
			matches(rule.To[0].PodSelector.MatchLabels, gwLabels) && allPorts(rule, 8090):
			gw++
		case !gateway && allIPBlocks(rule) && allPorts(rule, 8090):
			gw++
		case forgeRule(rule):
			forge++
		default:
			t.Errorf("agents egress rule %d is to neither DNS, the gateway nor the forge: %+v", i, rule)
		}
		for _, p := range rule.To {
			if p.IPBlock != nil && (p.IPBlock.CIDR == "0.0.0.0/0" || p.IPBlock.CIDR == "::/0") {
				t.Errorf("agents egress rule %d allows every address", i)
			}
		}
	}
	if dns != 1 || gw != 1 || forge != 1 {
		t.Errorf("agents egress: %d DNS, %d gateway, %d forge rules; want one each", dns, gw, forge)
	}
	if want := map[bool]int{true: 0, false: 1}[isolated]; status != want {
		t.Errorf("agents egress: %d rules to the other replicas' status port, want %d", status, want)
	}
	for i, rule := range agents.Spec.Ingress {
		if len(rule.From) == 0 || len(rule.Ports) == 0 {
			t.Errorf("agents ingress rule %d allows every source or port", i)
		}
		for _, p := range rule.From {
			if isolated && p.PodSelector != nil && matches(p.PodSelector.MatchLabels, agentLabels) {
				t.Errorf("agents ingress rule %d lets the replicas reach each other", i)
			}
		}
		for _, p := range rule.Ports {
			if p.Port == nil || (p.Port.StrVal != "status" && p.Port.StrVal != "webhook") {
				t.Errorf("agents ingress rule %d opens port %v", i, p.Port)
			}
		}
	}
	gp := r.policy("disinto-gateway")
	if !gateway {
		if gp != nil {
			t.Error("a gateway NetworkPolicy without the gateway")
		}
		return
	}
	if gp == nil {
		t.Fatal("no NetworkPolicy for the gateway")
	}
	hasTypes(t, gp)
	if !matches(gp.Spec.PodSelector.MatchLabels, gwLabels) || matches(gp.Spec.PodSelector.MatchLabels, agentLabels) {
		t.Error("the gateway's NetworkPolicy does not select the gateway alone")
	}
	if len(gp.Spec.Ingress) != 1 || len(gp.Spec.Ingress[0].From) != 1 {
		t.Fatalf("gateway ingress %+v, want one rule from the agents", gp.Spec.Ingress)
	}
	from := gp.Spec.Ingress[0].From[0]
	if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil ||
		!matches(from.PodSelector.MatchLabels, agentLabels) || matches(from.PodSelector.MatchLabels, gwLabels) {
		t.Errorf("gateway ingress is not from the agents' pods alone: %+v", from)
	}
	if len(gp.Spec.Ingress[0].Ports) != 1 || gp.Spec.Ingress[0].Ports[0].Port.StrVal != "gateway" {
		t.Errorf("gateway ingress ports %v", gp.Spec.Ingress[0].Ports)
	}
	if len(gp.Spec.Egress) != 2 || !allPorts(gp.Spec.Egress[0], 53) || !allIPBlocks(gp.Spec.Egress[1]) || !allPorts(gp.Spec.Egress[1], 443) {
		t.Errorf("gateway egress %+v, want DNS and the model API on 443", gp.Spec.Egress)
	}
	for _, p := range gp.Spec.Egress[1].To {
		for _, private := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} {
			if p.IPBlock.CIDR == "0.0.0.0/0" && !slices.Contains(p.IPBlock.Except, private) {
				t.Errorf("the gateway may reach %s", private)
			}
		}
	}
}

func hasTypes(t testing.TB, p *networkingv1.NetworkPolicy) {
	t.Helper()
	if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Errorf("NetworkPolicy %s: policy types %v, want Ingress and Egress", p.Name, p.Spec.PolicyTypes)
	}
}

// forgeRule: the forge's rule names addresses or peers in another
// namespace, never the agents' or every pod of this one.
func forgeRule(rule networkingv1.NetworkPolicyEgressRule) bool {
	for _, p := range rule.To {
		if p.IPBlock == nil && p.NamespaceSelector == nil {
			return false
		}
		if p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchLabels) == 0 && len(p.NamespaceSelector.MatchExpressions) == 0 {
			return false
		}
	}
	return true
}

func allIPBlocks(rule networkingv1.NetworkPolicyEgressRule) bool {
	for _, p := range rule.To {
		if p.IPBlock == nil {
			return false
		}
	}
	return len(rule.To) > 0
}

func allPorts(rule networkingv1.NetworkPolicyEgressRule, port int32) bool {
	for _, p := range rule.Ports {
		if p.Port == nil || p.Port.IntVal != port || p.EndPort != nil {
			return false
		}
	}
	return len(rule.Ports) > 0
}

func probe(t testing.TB, what string, p *corev1.Probe, path, port string) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s: no HTTP probe", what)
		return
	}
	if p.HTTPGet.Path != path || p.HTTPGet.Port.StrVal != port {
		t.Errorf("%s probe: %s on %s, want %s on %s", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path, port)
	}
}

func container(t testing.TB, p *corev1.PodTemplateSpec, name string) *corev1.Container {
	t.Helper()
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func envOf(c *corev1.Container) map[string]*corev1.EnvVar {
	m := map[string]*corev1.EnvVar{}
	for i := range c.Env {
		m[c.Env[i].Name] = &c.Env[i]
	}
	return m
}

func mounted(c *corev1.Container, volume, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume && m.MountPath == path {
			return true
		}
	}
	return false
}

func port(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func matches(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	b, _ := yaml.Marshal(n)
	return strings.TrimSpace(string(b))
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the render (go test -update rewrites it after a deliberate change):\n%s", path, diff(string(want), got))
	}
}

// diff shows the first lines that differ.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n- " + a + "\n+ " + b
		}
	}
	return ""
}

func mustValues(s string) map[string]any {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// merge lays over onto base, map by map; a nil in over removes the key,
// as `--set key=null` does.
func merge(base, over map[string]any) map[string]any {
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = merge(bm, om)
				continue
			}
		}
		base[k] = v
	}
	return base
}
