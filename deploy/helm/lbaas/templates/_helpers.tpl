{{- define "lbaas.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's base name: <release>-lbaas, or the release name alone when it already says lbaas. */}}
{{- define "lbaas.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lbaas.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "lbaas.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "lbaas.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component (worker, kube, full-resync). */}}
{{- define "lbaas.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lbaas.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "lbaas.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "lbaas.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "lbaas.tag" .) }}
{{- end }}

{{- define "lbaas.kubeName" -}}
{{- printf "%s-kube" (include "lbaas.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lbaas.workerName" -}}
{{- printf "%s-worker" (include "lbaas.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lbaas.engineSecretName" -}}
{{- if .Values.engine.token.existingSecret }}
{{- .Values.engine.token.existingSecret }}
{{- else if .Values.engine.token.value }}
{{- printf "%s-engine" (include "lbaas.fullname" .) }}
{{- else }}
{{- fail "engine.token: set engine.token.existingSecret (a Secret holding the Engine API token under engine.token.key) or engine.token.value" }}
{{- end }}
{{- end }}

{{- define "lbaas.temporalApiKeySecretName" -}}
{{- if .Values.temporal.apiKey.existingSecret }}
{{- .Values.temporal.apiKey.existingSecret }}
{{- else if .Values.temporal.apiKey.value }}
{{- printf "%s-temporal-api-key" (include "lbaas.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The Temporal connection, as the environment @temporalio/envconfig reads (cli/connect.ts, worker/start.ts), and the
task queue. Every container of the chart takes it.
*/}}
{{- define "lbaas.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ required "temporal.address: the Temporal frontend's host:port, e.g. temporal-frontend.temporal:7233" .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ required "temporal.namespace: the Temporal namespace lbaas works in" .Values.temporal.namespace | quote }}
- name: LBAAS_TASK_QUEUE
  value: {{ required "temporal.taskQueue: the task queue workers and lbaas kube share" .Values.temporal.taskQueue | quote }}
{{- with (include "lbaas.temporalApiKeySecretName" .) }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.temporal.apiKey.key }}
{{- end }}
{{- if .Values.temporal.tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- with .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if .Values.temporal.tls.existingSecret }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/lbaas/temporal-tls/{{ .Values.temporal.tls.certKey }}
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/lbaas/temporal-tls/{{ .Values.temporal.tls.keyKey }}
{{- with .Values.temporal.tls.caKey }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/lbaas/temporal-tls/{{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lbaas.temporalTlsVolumeMount" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: /etc/lbaas/temporal-tls
  readOnly: true
{{- end }}
{{- end }}

{{- define "lbaas.temporalTlsVolume" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ .Values.temporal.tls.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end }}

{{/* The root file system is read-only: node and the SDK get a writable /tmp. */}}
{{- define "lbaas.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end }}
