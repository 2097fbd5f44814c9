{{/* vim: set filetype=mustache: */}}

{{/* The validation pods: the post-install hook Job and the `helm test` pod. */}}

{{/*
The validation topic regex: validation.topics, else the whitelist as one regex, minus the
blacklist via a negative lookahead (valid in both Python and Java regex).
*/}}
{{- define "kmirror.validation.topics" -}}
{{- if .Values.validation.topics -}}
{{- .Values.validation.topics -}}
{{- else -}}
{{- $inc := list -}}
{{- range splitList "," (.Values.whitelist | toString) }}{{ with trim . }}{{ $inc = append $inc . }}{{ end }}{{ end -}}
{{- $exc := list -}}
{{- range splitList "," (.Values.blacklist | toString) }}{{ with trim . }}{{ $exc = append $exc . }}{{ end }}{{ end -}}
{{- if $exc -}}
{{- printf "^(?!(?:%s)$)(?:%s)$" (join "|" $exc) (join "|" $inc) -}}
{{- else -}}
{{- join "|" $inc -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
THE kmirror-validate invocation (ENTRYPOINT of the validate image), shared by the hook Job and
the `helm test` pod. Security settings reach it through the same environment as the mirror.
*/}}
{{- define "kmirror.validation.args" -}}
{{- $ := .ctx -}}
{{- $v := $.Values.validation -}}
{{- $cl := include "kmirror.clusters" $ | fromYaml -}}
- --source-bootstrap-servers={{ $cl.source.bootstrapServers }}
- --target-bootstrap-servers={{ $cl.target.bootstrapServers }}
- --topics={{ include "kmirror.validation.topics" $ }}
- --mode={{ $v.mode }}
- --wait-timeout={{ (ternary $v.hook.waitTimeoutSeconds $v.waitTimeoutSeconds (eq .hook true)) | int64 }}
{{- /* An at-least-once mirror leaves duplicates after a restart by design; exactly-once none. */}}
- --duplicates={{ $v.duplicates | default (ternary "fail" "allow" ($.Values.exactlyOnce | default false)) }}
- --from={{ $v.range.from }}
{{- if .hook }}
{{- /* Bounded so a backlog cannot hold up the install: the last N records the mirror has copied. */}}
- --to=copied
- --last={{ $v.hook.lastRecords | int64 }}
{{- else }}
{{- with $v.range.since }}
- --since={{ . }}
{{- end }}
{{- with $v.range.last }}
- --last={{ . | int64 }}
{{- end }}
{{- end }}
{{- range $v.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/* Whether the validation pods render at all (the mirror must run for a check to pass). */}}
{{- define "kmirror.validation.active" -}}
{{- if and (gt (int .Values.replicaCount) 0) (or .Values.validation.hook.enabled .Values.validation.test.enabled) -}}
true
{{- end -}}
{{- end -}}

{{/*
Pod spec of a validation pod (hook Job template and test pod): the shared pod parts, the
validation image and arguments, and only the node affinity (the mirror's pod (anti-)affinity
describes mirror pods, not a one-off check).
Usage: include "kmirror.validation.podSpec" (dict "ctx" $ "activeDeadlineSeconds" N ["hook" true])
*/}}
{{- define "kmirror.validation.podSpec" -}}
{{- $ := .ctx -}}
{{- $v := $.Values -}}
{{- $podFields := "restartPolicy: Never" -}}
{{- with .activeDeadlineSeconds }}{{ $podFields = printf "%s\nactiveDeadlineSeconds: %v" $podFields . }}{{ end -}}
{{- $affinity := "" -}}
{{- with $v.nodeAffinity }}{{ $affinity = dict "nodeAffinity" . | toYaml }}{{ end -}}
{{- $args := include "kmirror.validation.args" (dict "ctx" $ "hook" .hook) -}}
{{- include "kmirror.podSpec" (dict "ctx" $
  "serviceAccountName" (include "kmirror.validation.serviceAccountName" $)
  "automountServiceAccountToken" false
  "clusterSettings" true
  "affinity" $affinity
  "podFields" $podFields
  "name" "validate"
  "image" (include "kmirror.validation.image" $)
  "pullPolicy" $v.validation.image.pullPolicy
  "containerFields" (printf "args:\n%s" ($args | trim | indent 2))
  "extraEnv" $v.validation.extraEnv
  "resources" $v.validation.resources
  "tmpSizeLimit" $v.validation.tmpSizeLimit) }}
{{- end -}}
