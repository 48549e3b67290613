// Package helmtest renders the Helm chart in deploy/helm/disinto as `helm
// template` does, with the helm.sh/helm/v3 module (no helm binary, no
// cluster), and decodes what it renders strictly into the Kubernetes API
// types. It is a module of its own so that the product's go.mod never
// depends on Helm or the Kubernetes API.
package helmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// KubeVersion is the cluster version the chart is rendered for: the
// oldest it supports (the pod-index label appeared in 1.28).
const KubeVersion = "v1.28.0"

// Render renders the chart at dir as release "disinto" in namespace ns
// with vals over the chart's defaults, client side only, and returns the
// manifest.
func Render(dir, ns string, vals map[string]any) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return "", err
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ReleaseName = "disinto"
	inst.Namespace = ns
	inst.DryRun = true
	inst.ClientOnly = true
	inst.Replace = true
	inst.IncludeCRDs = true
	inst.KubeVersion = kv
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// Object is one rendered object: the template it came from and its value,
// decoded into its API type.
type Object struct {
	Source string
	Kind   string
	Name   string
	Value  any
}

// kinds are the API types the chart may render; anything else is an
// error.
var kinds = map[string]func() any{
	"apps/v1/StatefulSet":                func() any { return new(appsv1.StatefulSet) },
	"apps/v1/Deployment":                 func() any { return new(appsv1.Deployment) },
	"v1/Service":                         func() any { return new(corev1.Service) },
	"v1/Secret":                          func() any { return new(corev1.Secret) },
	"v1/ConfigMap":                       func() any { return new(corev1.ConfigMap) },
	"v1/ServiceAccount":                  func() any { return new(corev1.ServiceAccount) },
	"v1/PersistentVolumeClaim":           func() any { return new(corev1.PersistentVolumeClaim) },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return new(networkingv1.NetworkPolicy) },
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (\S+)\s*$`)

// Decode splits a manifest into its documents and decodes each strictly:
// duplicate keys, fields the API type does not have, values of the wrong
// type and kinds outside the list are errors.
func Decode(manifest string) ([]Object, error) {
	var out []Object
	for _, doc := range strings.Split(manifest, "\n---") {
		doc = strings.TrimPrefix(doc, "---")
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		src := ""
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		var tm struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		mk := kinds[tm.APIVersion+"/"+tm.Kind]
		if mk == nil {
			return nil, fmt.Errorf("%s: %s %s is no kind the chart may render", src, tm.APIVersion, tm.Kind)
		}
		v := mk()
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", src, tm.Kind, tm.Metadata.Name, err)
		}
		out = append(out, Object{Source: src, Kind: tm.Kind, Name: tm.Metadata.Name, Value: v})
	}
	return out, nil
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
