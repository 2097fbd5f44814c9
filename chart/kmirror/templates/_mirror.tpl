{{/* vim: set filetype=mustache: */}}

{{/* The mirror Deployment's own pod parts (the shared ones are in _pod.tpl): its mode and arguments. */}}

{{- define "kmirror.mm2.dir" -}}
/etc/kmirror/mm2
{{- end -}}

{{- define "kmirror.control.dir" -}}
/etc/kmirror/secrets/control
{{- end -}}

{{/*
The mirror container's own environment before extraEnv: the control API's token file, in every
mode (the `run` of mm2Config mode reads KMIRROR_CONTROL_TOKEN_FILE too).
*/}}
{{- define "kmirror.mirror.env" -}}
{{- $env := list -}}
{{- if .Values.control.enabled -}}
{{- $env = append $env (dict "name" "KMIRROR_CONTROL_TOKEN_FILE" "value" (printf "%s/token" (include "kmirror.control.dir" .))) -}}
{{- end -}}
{{- toYaml (concat $env .Values.extraEnv) -}}
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
{{- if $v.mm2Config.reloadOnChange }}{{ $args = append $args "--reload-on-change" }}{{ end -}}
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

{{/* Pod-level fields only the mirror has. */}}
{{- define "kmirror.mirror.podFields" -}}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Container fields only the mirror has: command line, metrics port, probes. */}}
{{- define "kmirror.mirror.containerFields" -}}
{{- with .Values.command }}
command:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (include "kmirror.mirror.args" .) }}
args:
  {{- . | nindent 2 }}
{{- end }}
ports:
  - name: metrics
    containerPort: {{ .Values.metrics.port }}
    protocol: TCP
{{- if .Values.livenessProbe.enabled }}
livenessProbe:
  {{- include "kmirror.probe" (dict "probe" .Values.livenessProbe "path" "/healthz") | nindent 2 }}
{{- end }}
{{- if .Values.readinessProbe.enabled }}
readinessProbe:
  {{- include "kmirror.probe" (dict "probe" .Values.readinessProbe "path" "/readyz") | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The mirror's own volumes and their mounts: mm2.properties in mm2Config mode, extraVolumes. */}}
{{- define "kmirror.mirror.volumes" -}}
{{- if .Values.mm2Config.enabled }}
{{ include "kmirror.mm2.volume" . }}
{{- end }}
{{- if .Values.control.enabled }}
- name: control-token
  secret:
    secretName: {{ .Values.control.existingSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ .Values.control.tokenKey | quote }}
        path: token
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kmirror.mirror.volumeMounts" -}}
{{- if .Values.mm2Config.enabled }}
- name: mm2-config
  mountPath: {{ include "kmirror.mm2.dir" . }}
  readOnly: true
{{- end }}
{{- if .Values.control.enabled }}
- name: control-token
  mountPath: {{ include "kmirror.control.dir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}
