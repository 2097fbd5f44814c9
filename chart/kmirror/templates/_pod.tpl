{{/* vim: set filetype=mustache: */}}

{{/*
THE pod spec of every pod the chart runs: the mirror Deployment's and the validation pods' (hook
Job and `helm test` pod). What they share is written once here: ServiceAccount settings, pull
secrets, priority, the restricted security contexts, scheduling (nodeSelector, tolerations,
affinity), the cluster settings (ConfigMap env, Secret user names, mounted secret files), the
writable /tmp, image, resources. Each caller adds only what is its own.

"clusterSettings" says whether the container gets the cluster settings from values (ConfigMap
env, Secret user names, secret files): not the mirror in mm2Config mode, where the user's
mm2.properties is the whole configuration and KMIRROR_* settings would override it; always the
validation pods, which find the clusters by values in every mode.

Usage: include "kmirror.podSpec" (dict "ctx" $
  "serviceAccountName" NAME "automountServiceAccountToken" BOOL "clusterSettings" BOOL
  "affinity" YAML (optional) "podFields" YAML (optional, pod-level fields of the caller)
  "name" CONTAINER-NAME "image" REF "pullPolicy" POLICY
  "containerFields" YAML (optional: command, args, ports, probes)
  "extraEnv" LIST "resources" MAP "tmpSizeLimit" SIZE
  "volumes" YAML "volumeMounts" YAML (optional, the caller's own))
*/}}
{{- define "kmirror.podSpec" -}}
{{- $ := .ctx -}}
{{- $v := $.Values -}}
{{- $clusterSettings := .clusterSettings -}}
{{- $vars := list }}{{ if $clusterSettings }}{{ $vars = include "kmirror.sideVars" $ | fromYamlArray }}{{ end -}}
serviceAccountName: {{ .serviceAccountName }}
automountServiceAccountToken: {{ .automountServiceAccountToken }}
enableServiceLinks: false
{{- with .podFields }}
{{ . | trim }}
{{- end }}
{{- with (include "kmirror.imagePullSecrets" $) }}
imagePullSecrets:
{{- . | trim | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with .affinity }}
affinity:
  {{- . | trim | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: {{ .name }}
    image: {{ .image | quote }}
    imagePullPolicy: {{ .pullPolicy }}
    {{- with .containerFields }}
    {{- . | trim | nindent 4 }}
    {{- end }}
    {{- if $clusterSettings }}
    envFrom:
      - configMapRef:
          name: {{ include "kmirror.fullname" $ }}
    {{- end }}
    {{- $env := include "kmirror.secretEnv" $vars }}
    {{- if or $env .extraEnv }}
    env:
      {{- with $env }}{{ . | trim | nindent 6 }}{{ end }}
      {{- with .extraEnv }}{{ toYaml . | nindent 6 }}{{ end }}
    {{- end }}
    {{- with .resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- toYaml $v.containerSecurityContext | nindent 6 }}
    terminationMessagePolicy: FallbackToLogsOnError
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      {{- with (include "kmirror.secretVolumeMounts" $vars) }}{{ . | trim | nindent 6 }}{{ end }}
      {{- with .volumeMounts }}{{ . | trim | nindent 6 }}{{ end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ .tmpSizeLimit }}
  {{- with (include "kmirror.secretVolumes" $vars) }}{{ . | trim | nindent 2 }}{{ end }}
  {{- with .volumes }}{{ . | trim | nindent 2 }}{{ end }}
{{- end -}}

{{/* affinity: nodeAffinity merged into affinity. */}}
{{- define "kmirror.affinity" -}}
{{- $a := deepCopy (.Values.affinity | default dict) -}}
{{- with .Values.nodeAffinity }}{{ $_ := set $a "nodeAffinity" . }}{{ end -}}
{{- with $a }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- define "kmirror.probe" -}}
{{- $p := omit .probe "enabled" -}}
httpGet:
  path: {{ .path }}
  port: metrics
{{ toYaml $p }}
{{- end -}}
