{{/* vim: set filetype=mustache: */}}

{{/*
Schema registry mirroring (docs/schemas.md): the variables of schemaRegistry.source/target in the
format of "kmirror.sideVars" (_clusters.tpl), which appends them: URLs and user names as values,
the password, bearer token and CA as files mounted from the side's existingSecret (a Secret's
key is never an environment variable). Whether the settings make sense together (both URLs, the
ID mode, the subjects' regexes) is the image's to say, like every other setting.
*/}}
{{- define "kmirror.registryVars" -}}
{{- $files := dict "passwordKey" (list "BASIC_AUTH_PASSWORD_FILE" "password") "bearerTokenKey" (list "BEARER_TOKEN_FILE" "token") "caKey" (list "SSL_CA_LOCATION" "ca.crt") -}}
{{- range $side := list "source" "target" }}
{{- $r := get ($.Values.schemaRegistry | default dict) $side | default dict }}
{{- $prefix := printf "KMIRROR_SCHEMA_REGISTRY_%s" (upper $side) }}
{{- with $r.url }}
- {name: {{ printf "%s_URL" $prefix }}, kind: value, value: {{ . | toString | quote }}}
{{- end }}
{{- with $r.basicAuthUser }}
- {name: {{ printf "%s_BASIC_AUTH_USER" $prefix }}, kind: value, value: {{ . | toString | quote }}}
{{- end }}
{{- range $field, $f := $files }}
{{- with get $r $field }}
{{- if not $r.existingSecret }}
{{- fail (printf "schemaRegistry.%s.%s names a key of a Secret, but schemaRegistry.%s.existingSecret is empty: set it to the Secret that holds the key" $side $field $side) }}
{{- end }}
- name: {{ printf "%s_%s" $prefix (index $f 0) }}
  kind: file
  secret: {{ $r.existingSecret | quote }}
  key: {{ . | toString | quote }}
  volume: {{ printf "%s-registry" $side }}
  item: {{ index $f 1 }}
  path: {{ printf "%s/registry/%s" (include "kmirror.secretDir" $side) (index $f 1) | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The registries' ports, for the NetworkPolicy's egress (the URL's, else 443 or 80 by scheme). */}}
{{- define "kmirror.registryPorts" -}}
{{- range $side := list "source" "target" }}
{{- with (get ($.Values.schemaRegistry | default dict) $side | default dict).url }}
{{- $u := urlParse (toString .) }}
{{- if contains ":" $u.host }}
- {{ regexReplaceAll "^.*:" $u.host "" | int }}
{{- else }}
- {{ ternary 443 80 (eq $u.scheme "https") }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
