{{/* vim: set filetype=mustache: */}}

{{/* ------------------------------------------------------ mirror mode and topics */}}

{{- define "kmirror.mm2.dir" -}}
/etc/kmirror/mm2
{{- end -}}

{{/*
The mirror container's arguments, as a YAML list (empty: none). The image's ENTRYPOINT is
`kmirror entrypoint`: flags are added to the `kmirror run` it renders from the environment, and
a first argument that is a command runs that command instead (mm2Config mode:
`run --mm2-config ...`). With `command` set the user owns the whole command line: `args` as given.
*/}}
{{- define "kmirror.mirror.args" -}}
{{- $v := .Values -}}
{{- $args := list -}}
{{- if $v.command -}}
{{- $args = $v.args -}}
{{- else -}}
{{- if $v.mm2Config.enabled -}}
{{- $args = list "run" "--mm2-config" (printf "%s/mm2.properties" (include "kmirror.mm2.dir" .)) -}}
{{- with $v.mm2Config.flow }}{{ $args = concat $args (list "--flow" .) }}{{ end -}}
{{- with $v.consumerGroup }}{{ $args = concat $args (list "--group-id" .) }}{{ end -}}
{{- $args = concat $args (list "--abort.on.send.failure" ($v.abortOnSendFailure | toString) "--metrics-port" ($v.metrics.port | int64 | toString) "--log-level" $v.logLevel "--log-format" $v.logFormat) -}}
{{- if $v.strict }}{{ $args = append $args "--strict" }}{{ end -}}
{{- if $v.exactlyOnce }}{{ $args = append $args "--exactly-once" }}{{ end -}}
{{- end -}}
{{- with ($v.topicRefreshIntervalSeconds | int64) }}{{ $args = concat $args (list "--refresh-topics-interval-s" (toString .)) }}{{ end -}}
{{- if not $v.createTopics }}{{ $args = append $args "--no-create-topics" }}{{ end -}}
{{- $args = concat $args $v.args -}}
{{- end -}}
{{- with $args }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/* The volume holding the user's mm2.properties (mm2Config mode). */}}
{{- define "kmirror.mm2.volume" -}}
{{- $m := .Values.mm2Config -}}
- name: mm2-config
  {{- if $m.existingSecret }}
  secret:
    secretName: {{ $m.existingSecret | quote }}
    defaultMode: 0440
  {{- else }}
  configMap:
    name: {{ $m.existingConfigMap | quote }}
    defaultMode: 0440
  {{- end }}
    items:
      - key: {{ $m.key | quote }}
        path: mm2.properties
{{- end -}}
