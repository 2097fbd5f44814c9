{{/* vim: set filetype=mustache: */}}

{{/* Labels and annotations every resource carries. */}}

{{/*
Selector labels: name + instance, plus the component when given, because the validation pods
share name and instance and must not become endpoints of the metrics Service or count in the PDB.
Usage: include "kmirror.selectorLabels" (dict "ctx" $ "component" "mirror")
*/}}
{{- define "kmirror.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kmirror.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{/* Usage: include "kmirror.labels" (dict "ctx" $ "component" "mirror") */}}
{{- define "kmirror.labels" -}}
helm.sh/chart: {{ include "kmirror.chart" .ctx }}
{{ include "kmirror.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: kmirror
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* metadata.annotations block body (commonAnnotations plus extra), empty when there are none. */}}
{{- define "kmirror.annotations" -}}
{{- $all := merge (deepCopy (.extra | default dict)) (deepCopy (.ctx.Values.commonAnnotations | default dict)) -}}
{{- with $all }}
{{- toYaml . }}
{{- end }}
{{- end -}}

{{/*
A monitor's relabelings: with metrics.mm2Names, first the pod labels Strimzi's MM2 dashboard
filters on (strimzi.io/kind, strimzi.io/cluster, as Strimzi's own PodMonitor copies them), then
the user's. Args: ctx, user (the monitor's relabelings value).
*/}}
{{- define "kmirror.relabelings" -}}
{{- $rules := list -}}
{{- if .ctx.Values.metrics.mm2Names -}}
{{- range list "kind" "cluster" -}}
{{- $rules = append $rules (dict "sourceLabels" (list (printf "__meta_kubernetes_pod_label_strimzi_io_%s" .)) "targetLabel" (printf "strimzi_io_%s" .)) -}}
{{- end -}}
{{- end -}}
{{- with concat $rules (.user | default list) -}}
{{- toYaml . -}}
{{- end -}}
{{- end -}}
