{{/* vim: set filetype=mustache: */}}

{{/* Credentials from Secrets: user names as env, everything else as mounted files. */}}

{{/* Paths where the secret keys of one side are mounted (items pin the file names). */}}
{{- define "kmirror.secretDir" -}}
{{- printf "/etc/kmirror/secrets/%s" . -}}
{{- end -}}

{{/* env entries taken from Secrets: only the SASL user names (passwords are files). */}}
{{- define "kmirror.secretEnv" -}}
{{- range (include "kmirror.sides" . | fromYamlArray) }}
{{- if include "kmirror.passwordSasl" .c }}
- name: {{ .prefix }}_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .c.sasl.existingSecret | quote }}
      key: {{ .c.sasl.usernameKey | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "kmirror.secretVolumes" -}}
{{- range (include "kmirror.sides" . | fromYamlArray) }}
{{- $proto := .c.securityProtocol | default "PLAINTEXT" }}
{{- if include "kmirror.passwordSasl" .c }}
- name: {{ .side }}-sasl
  secret:
    secretName: {{ .c.sasl.existingSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ .c.sasl.passwordKey | quote }}
        path: password
{{- else if include "kmirror.oidc" .c }}
- name: {{ .side }}-oauth
  secret:
    secretName: {{ .c.auth.oauthbearer.existingSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ .c.auth.oauthbearer.clientSecretKey | quote }}
        path: client-secret
{{- end }}
{{- if has $proto (list "SSL" "SASL_SSL") }}
{{- if .c.tls.caSecret }}
- name: {{ .side }}-tls-ca
  secret:
    secretName: {{ .c.tls.caSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ .c.tls.caKey | quote }}
        path: ca.crt
{{- end }}
{{- if .c.tls.clientCertSecret }}
- name: {{ .side }}-tls-client
  secret:
    secretName: {{ .c.tls.clientCertSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ .c.tls.certKey | quote }}
        path: tls.crt
      - key: {{ .c.tls.keyKey | quote }}
        path: tls.key
      {{- if .c.tls.keyPasswordKey }}
      - key: {{ .c.tls.keyPasswordKey | quote }}
        path: key-password
      {{- end }}
{{- end }}
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
