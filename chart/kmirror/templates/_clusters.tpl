{{/* vim: set filetype=mustache: */}}

{{/*
The source and target clusters and their variables. What plays which side, which value becomes
which variable and which variables a protocol, mechanism and method read are looked up in
files/rules.json, generated from the image's model by scripts/chart-rules (the schema's rules
come from the same place): these helpers know no protocol, mechanism or KUDO rule themselves.
*/}}

{{- define "kmirror.rules" -}}
{{- .Files.Get "files/rules.json" -}}
{{- end -}}

{{/* A map's values by dotted path ("sasl.mechanism"), three levels deep, as strings: what rules.json names. */}}
{{- define "kmirror.flat" -}}
{{- $flat := dict -}}
{{- range $k1, $v1 := . }}{{ if kindIs "map" $v1 }}{{ range $k2, $v2 := $v1 }}{{ if kindIs "map" $v2 }}{{ range $k3, $v3 := $v2 }}
{{- $_ := set $flat (printf "%s.%s.%s" $k1 $k2 $k3) ($v3 | toString) }}{{ end }}{{ else }}
{{- $_ := set $flat (printf "%s.%s" $k1 $k2) ($v2 | toString) }}{{ end }}{{ end }}{{ else }}
{{- $_ := set $flat $k1 ($v1 | toString) }}{{ end }}{{ end -}}
{{- $flat | toJson -}}
{{- end -}}

{{/*
The sides as a list of {side, prefix, from, c}: c is the cluster block playing the side (rules.json
"roles", by external.clusterType), with "auth" = auth.<side> plus awsRegion from auth.aws.region;
"from" names the block, for messages.
Usage: include "kmirror.sides" . | fromYamlArray
*/}}
{{- define "kmirror.sides" -}}
{{- $v := .Values -}}
{{- $rules := include "kmirror.rules" . | fromJson -}}
{{- $roles := get $rules.roles ($v.external.clusterType | toString) | default (get $rules.roles "") -}}
{{- range $side := list "source" "target" }}
{{- $from := get $roles $side -}}
{{- $c := deepCopy (get $v $from | default dict) -}}
{{- $_ := set $c "auth" (merge (dict "awsRegion" $v.auth.aws.region) (deepCopy (get $v.auth $side | default dict))) }}
- {side: {{ $side }}, prefix: {{ get $rules.prefixes $side }}, from: {{ $from }}, c: {{ $c | toJson }}}
{{- end }}
{{- end -}}

{{/* The effective clusters as YAML {source: {...}, target: {...}}, each with "from". */}}
{{- define "kmirror.clusters" -}}
{{- range (include "kmirror.sides" . | fromYamlArray) }}
{{ .side }}: {{ merge (dict "from" .from) .c | toJson }}
{{- end }}
{{- end -}}

{{/*
The variables of both sides, as a YAML list of {name, kind, value} (kind value) or {name, kind,
secret, key} (kind secretEnv: from a Secret) plus {volume, item, path} (kind file: the key is
mounted at path, which is the variable's value). A rules.json row counts when its value is set
and the side's protocol, mechanism and method read it, or when it is a cluster-block setting of
its own: the image then refuses it or warns, as the schema does.
*/}}
{{- define "kmirror.sideVars" -}}
{{- $rules := include "kmirror.rules" . | fromJson -}}
{{- range $s := include "kmirror.sides" . | fromYamlArray }}
{{- $at := include "kmirror.flat" $s.c | fromJson }}
{{- $who := list }}{{ range $rules.readsBy }}{{ $who = append $who (get $at .) }}{{ end }}
{{- $reads := get $rules.reads (join "|" $who) | default list }}
{{- range $rules.rows }}
{{- $set := get $at .when }}
{{- if and $set (or (has .name $reads) (and (eq .block "cluster") (ne $set .default))) }}
- name: {{ printf "%s_%s" $s.prefix .name }}
  kind: {{ .kind }}
  {{- if eq .kind "value" }}
  value: {{ $set | quote }}
  {{- else }}
  secret: {{ get $at .secret | quote }}
  key: {{ get $at .key | quote }}
  {{- end }}
  {{- with .file }}
  volume: {{ printf "%s-%s" $s.side (dir .) }}
  item: {{ base . }}
  path: {{ printf "%s/%s" (include "kmirror.secretDir" $s.side) . | quote }}
  {{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- include "kmirror.registryVars" . }}
{{- end -}}

{{/* "true" when a cluster block holds a setting of its own (a rules.json cluster row off its default). */}}
{{- define "kmirror.blockSet" -}}
{{- $at := include "kmirror.flat" (index . 1) | fromJson -}}
{{- range (index . 0).rows }}{{ if and (eq .block "cluster") (ne (get $at .when) .default) }}true{{ end }}{{ end -}}
{{- end -}}
