{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "wave.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified base name; components append -core, -agent, -webhook. */}}
{{- define "wave.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "wave.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. Call with (dict "ctx" $ "component" "core"). */}}
{{- define "wave.labels" -}}
helm.sh/chart: {{ include "wave.chart" .ctx }}
{{ include "wave.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: wave
{{- end }}

{{- define "wave.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wave.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end }}

{{- define "wave.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end }}

{{/* Names of the generated objects, in one place so templates and NOTES agree. */}}
{{- define "wave.core" -}}{{ include "wave.fullname" . }}-core{{- end }}
{{- define "wave.agent" -}}{{ include "wave.fullname" . }}-agent{{- end }}
{{- define "wave.webhook" -}}{{ include "wave.fullname" . }}-webhook{{- end }}
{{- define "wave.cleanup" -}}{{ include "wave.fullname" . }}-cleanup{{- end }}
{{- define "wave.config" -}}{{ include "wave.fullname" . }}-config{{- end }}
{{- define "wave.tokensSecret" -}}
{{- default (printf "%s-tokens" (include "wave.fullname" .)) .Values.auth.existingSecret }}
{{- end }}
{{/* Warmup and pre-pull pods: a namespace of their own, without Secrets (docs/security.md). */}}
{{- define "wave.warmupNamespace" -}}
{{- default (printf "%s-warmup" .Release.Namespace) .Values.warmup.namespace }}
{{- end }}

{{/* Namespace of the webhook's spot slot ledgers and its repair Lease (RBAC.md, scope "ledger"). */}}
{{- define "wave.ledgerNamespace" -}}
{{- default (printf "%s-spot-ledgers" .Release.Namespace) .Values.webhook.ledgerNamespace }}
{{- end }}
{{- define "wave.caIssuer" -}}{{ include "wave.fullname" . }}-ca{{- end }}

{{/* Whether core keeps its history in PostgreSQL (otherwise SQLite on a PVC). */}}
{{- define "wave.postgres" -}}
{{- if .Values.database.urlSecret.name }}true{{- end }}
{{- end }}

{{/* The hardened pod and container security contexts shared by every component. */}}
{{- define "wave.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "wave.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* Environment shared by every component. */}}
{{- define "wave.commonEnv" -}}
- name: WAVE_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: WAVE_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: WAVE_CLUSTER_ID
  value: {{ .Values.clusterId | quote }}
- name: WAVE_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end }}

{{/* Pod-level scheduling knobs of a component. Call with (dict "c" .Values.core "ctx" $). */}}
{{- define "wave.scheduling" -}}
{{- with .c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- /* avoidSpotNodes and avoidKarpenterNodes: Wave's own pods off spot nodes and off Karpenter's
  nodes (which consolidation moves), unless the component's affinity has a nodeAffinity. Both
  required: one term with both expressions; preferred: a preference each. */}}
{{- $affinity := deepCopy (default (dict) .c.affinity) }}
{{- if not (hasKey $affinity "nodeAffinity") }}
{{- $required := list }}
{{- $preferred := list }}
{{- $notSpot := dict "key" "karpenter.sh/capacity-type" "operator" "NotIn" "values" (list "spot") }}
{{- $notKarpenter := dict "key" "karpenter.sh/nodepool" "operator" "DoesNotExist" }}
{{- range $rule := list (list .ctx.Values.avoidSpotNodes $notSpot) (list .ctx.Values.avoidKarpenterNodes $notKarpenter) }}
{{- if eq (index $rule 0) "required" }}
{{- $required = append $required (index $rule 1) }}
{{- else if eq (index $rule 0) "preferred" }}
{{- $preferred = append $preferred (dict "weight" 100 "preference" (dict "matchExpressions" (list (index $rule 1)))) }}
{{- end }}
{{- end }}
{{- $node := dict }}
{{- with $required }}
{{- $_ := set $node "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" (list (dict "matchExpressions" .))) }}
{{- end }}
{{- with $preferred }}
{{- $_ := set $node "preferredDuringSchedulingIgnoredDuringExecution" . }}
{{- end }}
{{- with $node }}
{{- $_ := set $affinity "nodeAffinity" . }}
{{- end }}
{{- end }}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A PodDisruptionBudget for a component with more than one replica. At one replica a PDB would
forbid every eviction (minAvailable 1) and its node could never be drained or consolidated by
Karpenter; without one the pod is simply rescheduled. Call with (dict "c" .Values.core "component"
"core" "ctx" $).
*/}}
{{- define "wave.pdb" -}}
{{- if gt (int .c.replicas) 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "wave.fullname" .ctx }}-{{ .component }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "wave.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
spec:
  maxUnavailable: {{ .c.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "wave.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 6 }}
{{- end }}
{{- end }}

{{/* A component's topologySpreadConstraints, each selecting its own pods; only with > 1 replica. */}}
{{- define "wave.topologySpread" -}}
{{- if and (gt (int .c.replicas) 1) .c.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range .c.topologySpreadConstraints }}
  - {{ toYaml (merge (dict "labelSelector" (dict "matchLabels" (include "wave.selectorLabels" (dict "ctx" $.ctx "component" $.component) | fromYaml))) .) | nindent 4 | trim }}
  {{- end }}
{{- end }}
{{- end }}

{{/*
The port the webhook's container listens on: webhook.port, or on the node's network
(webhook.hostNetwork) webhook.hostNetworkPort, which must be free on every node. The Service and
the MutatingWebhookConfiguration keep webhook.port.
*/}}
{{- define "wave.webhookContainerPort" -}}
{{- if .Values.webhook.hostNetwork }}{{ .Values.webhook.hostNetworkPort }}{{ else }}{{ .Values.webhook.port }}{{ end }}
{{- end }}

{{/*
A component's ServiceAccount: <release>-<component> made by the chart, or serviceAccount.name
(with create=false, one you made, e.g. by eksctl for IRSA). Call with (dict "ctx" $ "component" "core").
*/}}
{{- define "wave.serviceAccountName" -}}
{{- $sa := (index .ctx.Values .component).serviceAccount }}
{{- if $sa.create }}
{{- default (printf "%s-%s" (include "wave.fullname" .ctx) .component) $sa.name }}
{{- else }}
{{- required (printf "%s.serviceAccount.name is required when %s.serviceAccount.create=false" .component .component) $sa.name }}
{{- end }}
{{- end }}

{{- /* The control plane's source CIDRs, comma-separated, for the webhook port's NetworkPolicy and
  the webhook's reserved connections (issue 42): webhook.controlPlaneCidrs; else, with
  webhook.controlPlaneLookup, the API server's own addresses from the `default/kubernetes`
  EndpointSlice (as /32s, /128s) — not on EKS or GKE, whose control plane reaches pods from other
  addresses (EKS: ENIs replaced on upgrades; GKE: Konnectivity); else empty (any source). */}}
{{- define "wave.controlPlaneCidrs" -}}
{{- $cidrs := list }}
{{- range .Values.webhook.controlPlaneCidrs }}{{- $cidrs = append $cidrs . }}{{- end }}
{{- $managed := regexMatch "-eks-|-gke\\." .Capabilities.KubeVersion.Version }}
{{- if and (not $cidrs) .Values.webhook.controlPlaneLookup (not $managed) }}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" }}
{{- range ($slice.endpoints | default list) }}{{- range .addresses }}
{{- $cidrs = append $cidrs (printf "%s/%s" . (ternary "128" "32" (contains ":" .))) }}
{{- end }}{{- end }}
{{- end }}
{{- join "," (uniq $cidrs) }}
{{- end }}
