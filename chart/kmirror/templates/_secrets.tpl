{{/* vim: set filetype=mustache: */}}

{{/* Credentials from Secrets: user names as env, everything else as mounted files. */}}

{{/* Paths where the secret keys of one side are mounted (items pin the file names). */}}
{{- define "kmirror.secretDir" -}}
{{- printf "/etc/kmirror/secrets/%s" . -}}
{{- end -}}

{{/*
env entries taken from Secrets: the sides' variables of kind secretEnv. These helpers take the
list "kmirror.sideVars" returns (_clusters.tpl), computed once per pod.
*/}}
{{- define "kmirror.secretEnv" -}}
{{- range . }}
{{- if eq .kind "secretEnv" }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret | quote }}
      key: {{ .key | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* One secret volume per Secret a side mounts, with the keys its variables of kind file name. */}}
{{- define "kmirror.secretVolumes" -}}
{{- $volumes := dict -}}
{{- $order := list -}}
{{- range . }}
{{- if eq .kind "file" }}
{{- if not (hasKey $volumes .volume) }}
{{- $order = append $order .volume }}
{{- $_ := set $volumes .volume (dict "secret" .secret "items" list) }}
{{- end }}
{{- $vol := get $volumes .volume }}
{{- $_ := set $vol "items" (append $vol.items (dict "key" .key "path" .item)) }}
{{- end }}
{{- end }}
{{- range $order }}
{{- $vol := get $volumes . }}
- name: {{ . }}
  secret:
    secretName: {{ $vol.secret | quote }}
    defaultMode: 0440
    items:
      {{- range $vol.items }}
      - key: {{ .key | quote }}
        path: {{ .path }}
      {{- end }}
{{- end }}
{{- end -}}

{{- define "kmirror.secretVolumeMounts" -}}
{{- range (include "kmirror.secretVolumes" . | fromYamlArray) }}
- name: {{ .name }}
  mountPath: {{ printf "%s/%s" (include "kmirror.secretDir" (regexReplaceAll "-.*$" .name "")) (regexReplaceAll "^[a-z]+-" .name "") }}
  readOnly: true
{{- end }}
{{- end -}}
