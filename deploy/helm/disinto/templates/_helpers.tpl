{{/* The release's base name: the release, with the chart's name unless it has it. */}}
{{- define "disinto.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "disinto.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "disinto.agents" -}}{{ include "disinto.fullname" . }}-agents{{- end -}}
{{- define "disinto.gateway" -}}{{ include "disinto.fullname" . }}-gateway{{- end -}}

{{/* Labels of every object; "disinto.labels" takes (dict "ctx" $ "component" name). */}}
{{- define "disinto.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
{{ include "disinto.selectorLabels" . }}
{{- end -}}

{{- define "disinto.selectorLabels" -}}
app.kubernetes.io/name: {{ include "disinto.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "disinto.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secrets the pods read, created by the chart or given. */}}
{{- define "disinto.agentsSecret" -}}
{{- .Values.secrets.agents.existingSecret | default (printf "%s-agents" (include "disinto.fullname" .)) -}}
{{- end -}}
{{- define "disinto.modelSecret" -}}
{{- .Values.secrets.model.existingSecret | default (printf "%s-model" (include "disinto.fullname" .)) -}}
{{- end -}}
{{- define "disinto.gatewayTokenSecret" -}}
{{- .Values.secrets.gatewayToken.existingSecret | default (printf "%s-gateway-token" (include "disinto.fullname" .)) -}}
{{- end -}}

{{- define "disinto.projectsConfigMap" -}}
{{- .Values.projectsConfigMap | default (printf "%s-projects" (include "disinto.fullname" .)) -}}
{{- end -}}

{{/* The gateway as the agents and their sessions reach it. */}}
{{- define "disinto.gatewayURL" -}}
{{- if .Values.gateway.enabled -}}
http://{{ include "disinto.gateway" . }}.{{ .Release.Namespace }}.svc:{{ .Values.gateway.port }}
{{- else -}}
{{- .Values.gateway.externalURL -}}
{{- end -}}
{{- end -}}

{{/* Every required value, each failure one line naming it. */}}
{{- define "disinto.validate" -}}
{{- $v := .Values -}}
{{- if not $v.forge.url -}}
{{- fail "forge.url is required: the forge's URL as the agents reach it" -}}
{{- end -}}
{{- if and $v.networkPolicy.enabled (not $v.forge.egress.cidrs) (not $v.forge.egress.peers) -}}
{{- fail "forge.egress.cidrs or forge.egress.peers is required while networkPolicy.enabled: where the agents reach the forge" -}}
{{- end -}}
{{- if and (not $v.projects) (not $v.projectsConfigMap) -}}
{{- fail "projects or projectsConfigMap is required: the project files" -}}
{{- end -}}
{{- if lt (int $v.agents.replicas) 1 -}}
{{- fail "agents.replicas must be 1 or more" -}}
{{- end -}}
{{- if not $v.secrets.agents.existingSecret -}}
{{- $av := $v.secrets.agents.values | default dict -}}
{{- if lt (len (toString (index $av "DISINTO_STATUS_TOKEN" | default ""))) 16 -}}
{{- fail "secrets.agents.values.DISINTO_STATUS_TOKEN is required, 16 characters or more (or give secrets.agents.existingSecret)" -}}
{{- end -}}
{{- end -}}
{{- if and (not $v.secrets.gatewayToken.existingSecret) (lt (len (toString $v.secrets.gatewayToken.value)) 16) -}}
{{- fail "secrets.gatewayToken.value is required, 16 characters or more (or give secrets.gatewayToken.existingSecret)" -}}
{{- end -}}
{{- if $v.gateway.enabled -}}
{{- $mv := $v.secrets.model.values | default dict -}}
{{- if and (not $v.secrets.model.existingSecret) (not (or (index $mv "ANTHROPIC_API_KEY") (index $mv "CLAUDE_CODE_OAUTH_TOKEN"))) -}}
{{- fail "secrets.model.values needs ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN (or give secrets.model.existingSecret)" -}}
{{- end -}}
{{- else -}}
{{- if not $v.gateway.externalURL -}}
{{- fail "gateway.externalURL is required when gateway.enabled is false: the agents' sessions reach the model only through a gateway" -}}
{{- end -}}
{{- if and $v.networkPolicy.enabled (not $v.gateway.external.cidrs) -}}
{{- fail "gateway.external.cidrs is required while networkPolicy.enabled and gateway.enabled is false: where the agents reach the gateway" -}}
{{- end -}}
{{- end -}}
{{- end -}}
