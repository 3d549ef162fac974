{{/*
The app name: the chart's, unless nameOverride. It is the
app.kubernetes.io/name label, hence the Prometheus job name the alerts
expect ("podchron").
*/}}
{{- define "podchron.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: the release name when it contains the app name (install
as "podchron" to get the kustomize base's names), else <release>-<name>.
*/}}
{{- define "podchron.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "podchron.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "podchron.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: the kustomize base's, without the release. They are
immutable on a DaemonSet, and keeping them equal to deploy/'s lets a
cluster move between the two. One tracer per node is the point: a second
release in the same namespace would select the first one's pods.
*/}}
{{- define "podchron.selectorLabels" -}}
app.kubernetes.io/name: {{ include "podchron.name" . }}
app.kubernetes.io/component: tracer
{{- end }}

{{/*
Labels of every object: deploy/'s (name, part-of) plus Helm's.
*/}}
{{- define "podchron.labels" -}}
app.kubernetes.io/name: {{ include "podchron.name" . }}
app.kubernetes.io/part-of: podchron
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
helm.sh/chart: {{ include "podchron.chart" . }}
{{- end }}

{{- define "podchron.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "podchron.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "podchron.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
GOMEMLIMIT: goMemLimit when set, else 90% of resources.limits.memory (a
Kubernetes quantity: plain bytes, or with a k/M/G/T/P/E or Ki/Mi/Gi/Ti/Pi/Ei
suffix), rounded down to whole MiB (128Mi -> 115MiB, what
deploy/daemonset.yaml writes out); empty without a memory limit.
*/}}
{{- define "podchron.goMemLimit" -}}
{{- if .Values.goMemLimit }}
{{- .Values.goMemLimit }}
{{- else }}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) }}
{{- if $limit }}
{{- $q := toString $limit }}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $suffix := trimPrefix $num $q }}
{{- $units := dict "" 1.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 }}
{{- if or (not $num) (not (hasKey $units $suffix)) }}
{{- fail (printf "resources.limits.memory %q: not a quantity GOMEMLIMIT can be computed from (use e.g. 128Mi, or set goMemLimit)" $q) }}
{{- end }}
{{- $mib := floor (divf (mulf (float64 $num) (get $units $suffix) 0.9) 1048576.0) }}
{{- if lt $mib 1.0 }}
{{- fail (printf "resources.limits.memory %q: 90%% of it is under 1 MiB" $q) }}
{{- end }}
{{- printf "%dMiB" (int64 $mib) }}
{{- end }}
{{- end }}
{{- end }}
