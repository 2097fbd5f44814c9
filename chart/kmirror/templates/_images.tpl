{{/* vim: set filetype=mustache: */}}

{{/* Image references of the mirror and the validation job, and their pull secrets. */}}

{{/*
registry/repository@digest, or registry/repository:tag (tag defaults to appVersion).
global.imageRegistry (an ECR or other private mirror) beats the image's own registry; the
validation image falls back to image.registry.
Usage: include "kmirror.imageRef" (dict "image" .Values.image "fallbackRegistry" "" "ctx" $)
*/}}
{{- define "kmirror.imageRef" -}}
{{- $registry := .image.registry | default .fallbackRegistry -}}
{{- with .ctx.Values.global }}{{ with .imageRegistry }}{{ $registry = . }}{{ end }}{{ end -}}
{{- $ref := .image.repository -}}
{{- if $registry }}{{ $ref = printf "%s/%s" (trimSuffix "/" $registry) $ref }}{{ end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $ref .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (.image.tag | default .ctx.Chart.AppVersion | toString) -}}
{{- end -}}
{{- end -}}

{{- define "kmirror.image" -}}
{{- include "kmirror.imageRef" (dict "image" .Values.image "fallbackRegistry" "" "ctx" .) -}}
{{- end -}}

{{- define "kmirror.validation.image" -}}
{{- include "kmirror.imageRef" (dict "image" .Values.validation.image "fallbackRegistry" .Values.image.registry "ctx" .) -}}
{{- end -}}

{{/* imagePullSecrets entries: accepts plain names and {name: ...} objects. */}}
{{- define "kmirror.imagePullSecrets" -}}
{{- range .Values.imagePullSecrets }}
{{- if kindIs "string" . }}
- name: {{ . | quote }}
{{- else }}
- name: {{ .name | quote }}
{{- end }}
{{- end }}
{{- end -}}
