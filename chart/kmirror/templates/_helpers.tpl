{{/* vim: set filetype=mustache: */}}

{{/* ------------------------------------------------------------------ names */}}

{{- define "kmirror.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Release-qualified name, at most 63 characters; the release name alone when it already contains
the chart name. Leaves room for the "-validate" suffix (Job names end up in a 63-char label).
*/}}
{{- define "kmirror.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 54 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 54 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 54 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kmirror.validation.fullname" -}}
{{- printf "%s-validate" (include "kmirror.fullname" .) -}}
{{- end -}}

{{- define "kmirror.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kmirror.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kmirror.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kmirror.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kmirror.validation.serviceAccountName" -}}
{{- if .Values.validation.serviceAccount.create -}}
{{- default (include "kmirror.validation.fullname" .) .Values.validation.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.validation.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* ----------------------------------------------------------------- labels */}}

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

{{/* ----------------------------------------------------------------- images */}}

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

{{/* --------------------------------------------------------------- clusters */}}

{{/* "true" when any setting of a cluster block differs from its default. */}}
{{- define "kmirror.clusterConfigured" -}}
{{- $c := . -}}
{{- $sasl := $c.sasl | default dict -}}
{{- $tls := $c.tls | default dict -}}
{{- if or $c.bootstrapServers $c.clusterType (ne ($c.securityProtocol | default "PLAINTEXT") "PLAINTEXT") $sasl.mechanism $sasl.existingSecret $tls.caSecret $tls.clientCertSecret -}}
true
{{- end -}}
{{- end -}}

{{/*
The effective source and target clusters as YAML: {mode, source: {...}, target: {...}}; each side
carries "from", the values path it came from, for error messages. KUDO style: external is the
source when external.clusterType is SOURCE, the target otherwise (DESTINATION).
Usage: include "kmirror.clusters" . | fromYaml
*/}}
{{- define "kmirror.clusters" -}}
{{- $v := .Values -}}
{{- $src := merge (dict "from" "source") (deepCopy $v.source) -}}
{{- $tgt := merge (dict "from" "target") (deepCopy $v.target) -}}
{{- $mode := "explicit" -}}
{{- if or (include "kmirror.clusterConfigured" $v.thisCluster) (include "kmirror.clusterConfigured" $v.external) -}}
{{- $mode = "kudo" -}}
{{- $this := merge (dict "from" "thisCluster") (deepCopy $v.thisCluster) -}}
{{- $ext := merge (dict "from" "external") (deepCopy $v.external) -}}
{{- if eq ($v.external.clusterType | toString) "SOURCE" -}}
{{- $src = $ext -}}{{- $tgt = $this -}}
{{- else -}}
{{- $src = $this -}}{{- $tgt = $ext -}}
{{- end -}}
{{- end -}}
{{- /* auth.source / auth.target follow the direction; "auth" never comes from a cluster block */ -}}
{{- $auth := $v.auth | default dict -}}
{{- $region := ($auth.aws | default dict).region | default "" -}}
{{- $_ := set $src "auth" (merge (dict "awsRegion" $region) (deepCopy ($auth.source | default dict))) -}}
{{- $_ = set $tgt "auth" (merge (dict "awsRegion" $region) (deepCopy ($auth.target | default dict))) -}}
mode: {{ $mode }}
source: {{ $src | toJson }}
target: {{ $tgt | toJson }}
{{- end -}}

{{/* "true" when a side authenticates with a user name and password (PLAIN, SCRAM-*). */}}
{{- define "kmirror.passwordSasl" -}}
{{- if and (hasPrefix "SASL_" (.securityProtocol | default "PLAINTEXT")) (not (has (.sasl.mechanism | default "") (list "OAUTHBEARER" "AWS_MSK_IAM"))) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when a side fetches OAUTHBEARER tokens from an OIDC endpoint with a client secret. */}}
{{- define "kmirror.oidc" -}}
{{- $o := .auth.oauthbearer | default dict -}}
{{- if and (hasPrefix "SASL_" (.securityProtocol | default "PLAINTEXT")) (eq (.sasl.mechanism | default "") "OAUTHBEARER") (ne ($o.method | default "oidc") "unsecured") -}}
true
{{- end -}}
{{- end -}}

{{/* Paths where the secret keys of one side are mounted (items pin the file names). */}}
{{- define "kmirror.secretDir" -}}
{{- printf "/etc/kmirror/secrets/%s" . -}}
{{- end -}}

{{/*
Non-secret environment of one side (SOURCE_CLUSTER_* or SINK_CLUSTER_*), as YAML name: value.
Passwords appear only as *_PASSWORD_FILE paths of mounted secret keys.
Usage: include "kmirror.sideEnv" (dict "side" "source" "prefix" "SOURCE_CLUSTER" "c" $c)
*/}}
{{- define "kmirror.sideEnv" -}}
{{- $p := .prefix -}}
{{- $c := .c -}}
{{- $dir := include "kmirror.secretDir" .side -}}
{{- $proto := $c.securityProtocol | default "PLAINTEXT" -}}
{{- with $c.bootstrapServers }}
{{ $p }}_BOOTSTRAP_SERVERS: {{ . | quote }}
{{- end }}
{{ $p }}_SECURITY_PROTOCOL: {{ $proto | quote }}
{{- if hasPrefix "SASL_" $proto }}
{{- $mech := $c.sasl.mechanism | default "" }}
{{- $o := $c.auth.oauthbearer | default dict }}
{{ $p }}_SASL_MECHANISM: {{ $mech | quote }}
{{- if include "kmirror.passwordSasl" $c }}
{{ $p }}_SASL_PASSWORD_FILE: {{ printf "%s/sasl/password" $dir | quote }}
{{- else if eq $mech "AWS_MSK_IAM" }}
{{- with $c.auth.awsRegion }}
{{ $p }}_AWS_REGION: {{ . | quote }}
{{- end }}
{{- with $c.auth.awsRoleArn }}
{{ $p }}_AWS_ROLE_ARN: {{ . | quote }}
{{- end }}
{{- else if include "kmirror.oidc" $c }}
{{ $p }}_SASL_OAUTHBEARER_METHOD: "oidc"
{{ $p }}_SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL: {{ $o.tokenEndpointUrl | quote }}
{{ $p }}_SASL_OAUTHBEARER_CLIENT_ID: {{ $o.clientId | quote }}
{{ $p }}_SASL_OAUTHBEARER_CLIENT_SECRET_FILE: {{ printf "%s/oauth/client-secret" $dir | quote }}
{{- with $o.scope }}
{{ $p }}_SASL_OAUTHBEARER_SCOPE: {{ . | quote }}
{{- end }}
{{- with $o.extensions }}
{{ $p }}_SASL_OAUTHBEARER_EXTENSIONS: {{ . | quote }}
{{- end }}
{{- else }}
{{ $p }}_SASL_OAUTHBEARER_METHOD: "unsecured"
{{ $p }}_SASL_OAUTHBEARER_CONFIG: {{ $o.unsecuredConfig | quote }}
{{- end }}
{{- end }}
{{- if has $proto (list "SSL" "SASL_SSL") }}
{{- if $c.tls.caSecret }}
{{ $p }}_SSL_CA_LOCATION: {{ printf "%s/tls-ca/ca.crt" $dir | quote }}
{{- end }}
{{- if $c.tls.clientCertSecret }}
{{ $p }}_SSL_CERTIFICATE_LOCATION: {{ printf "%s/tls-client/tls.crt" $dir | quote }}
{{ $p }}_SSL_KEY_LOCATION: {{ printf "%s/tls-client/tls.key" $dir | quote }}
{{- if $c.tls.keyPasswordKey }}
{{ $p }}_SSL_KEY_PASSWORD_FILE: {{ printf "%s/tls-client/key-password" $dir | quote }}
{{- end }}
{{- end }}
{{ $p }}_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: {{ $c.tls.endpointIdentificationAlgorithm | default "https" | quote }}
{{- end }}
{{- end -}}

{{/* librdkafka properties map -> ".properties" lines, sorted by key. */}}
{{- define "kmirror.propertiesLines" -}}
{{- range $k, $val := . }}
{{- if and (kindIs "float64" $val) (eq $val (float64 (int64 $val))) }}
{{ $k }}={{ int64 $val }}
{{- else }}
{{ $k }}={{ $val }}
{{- end }}
{{- end }}
{{- end -}}

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
Every non-secret setting the image's entrypoint reads (image/kmirror/config/env.py), as YAML
name: value. The ConfigMap holds exactly this; the checksum of it rolls the pods.
*/}}
{{- define "kmirror.configEnv" -}}
{{- $cl := include "kmirror.clusters" . | fromYaml -}}
{{- $v := .Values -}}
{{- include "kmirror.sideEnv" (dict "side" "source" "prefix" "SOURCE_CLUSTER" "c" $cl.source) }}
{{- include "kmirror.sideEnv" (dict "side" "target" "prefix" "SINK_CLUSTER" "c" $cl.target) }}
SOURCE_CLUSTER_CONSUMER_GROUP: {{ $v.consumerGroup | default (include "kmirror.fullname" .) | quote }}
WHITELISTED_TOPICS: {{ $v.whitelist | toString | quote }}
{{- with $v.blacklist }}
BLACKLISTED_TOPICS: {{ . | toString | quote }}
{{- end }}
NUM_STREAMS: {{ $v.numStreams | int64 | toString | quote }}
LOG_LEVEL: {{ $v.logLevel | quote }}
MIRROR_MAKER_OFFSET_COMMIT_INTERVAL: {{ $v.offsetCommitIntervalMs | int64 | toString | quote }}
MIRROR_MAKER_ABORT_ON_SEND_FAILURE: {{ $v.abortOnSendFailure | toString | quote }}
EXACTLY_ONCE: {{ $v.exactlyOnce | toString | quote }}
KMIRROR_RENAME_POLICY: {{ $v.rename.policy | quote }}
KMIRROR_SOURCE_ALIAS: {{ $v.rename.sourceAlias | quote }}
KMIRROR_TARGET_ALIAS: {{ $v.rename.targetAlias | quote }}
{{- with $v.disasterRecovery }}
KMIRROR_EMIT_CHECKPOINTS: {{ .emitCheckpoints | toString | quote }}
KMIRROR_EMIT_CHECKPOINTS_INTERVAL_SECONDS: {{ .checkpointsIntervalSeconds | toString | quote }}
KMIRROR_EMIT_HEARTBEATS: {{ .emitHeartbeats | toString | quote }}
KMIRROR_EMIT_HEARTBEATS_INTERVAL_SECONDS: {{ .heartbeatsIntervalSeconds | toString | quote }}
KMIRROR_SYNC_GROUP_OFFSETS: {{ .syncGroupOffsets | toString | quote }}
KMIRROR_SYNC_GROUP_OFFSETS_INTERVAL_SECONDS: {{ .syncGroupOffsetsIntervalSeconds | toString | quote }}
KMIRROR_GROUPS: {{ .groups | toString | quote }}
KMIRROR_GROUPS_EXCLUDE: {{ .groupsExclude | toString | quote }}
KMIRROR_PROVENANCE_HEADER: {{ .provenanceHeader | toString | quote }}
{{- end }}
KMIRROR_PARTITIONING: {{ $v.partitioning | quote }}
KMIRROR_ENGINE: {{ $v.engine | quote }}
KMIRROR_REPLICATION_FACTOR: {{ $v.replicationFactor | int64 | toString | quote }}
KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S: {{ $v.syncTopicConfigsIntervalSeconds | int64 | toString | quote }}
{{- with $v.progressTopic }}
KMIRROR_PROGRESS_TOPIC: {{ . | quote }}
{{- end }}
KMIRROR_METRICS_PORT: {{ $v.metrics.port | int64 | toString | quote }}
KMIRROR_LOG_FORMAT: {{ $v.logFormat | quote }}
KMIRROR_STRICT: {{ $v.strict | toString | quote }}
KMIRROR_CONFIG_DIR: "/tmp/kmirror"
{{- with $v.extraConsumerProperties }}
KMIRROR_EXTRA_CONSUMER_PROPERTIES: {{ include "kmirror.propertiesLines" . | trim | quote }}
{{- end }}
{{- with $v.extraProducerProperties }}
KMIRROR_EXTRA_PRODUCER_PROPERTIES: {{ include "kmirror.propertiesLines" . | trim | quote }}
{{- end }}
{{- end -}}

{{/* -------------------------------------------- secrets: env, volumes, mounts */}}

{{/* The sides with their values, for ranging: list of dict(side, prefix, c). */}}
{{- define "kmirror.sides" -}}
{{- $cl := include "kmirror.clusters" . | fromYaml -}}
- {side: source, prefix: SOURCE_CLUSTER, c: {{ $cl.source | toJson }}}
- {side: target, prefix: SINK_CLUSTER, c: {{ $cl.target | toJson }}}
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

{{/* ------------------------------------------------------------- pod parts */}}

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

{{/* ------------------------------------------------------------- validation */}}

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
Pod spec of a validation pod (hook Job template and test pod).
Usage: include "kmirror.validation.podSpec" (dict "ctx" $ "activeDeadlineSeconds" N ["hook" true])
*/}}
{{- define "kmirror.validation.podSpec" -}}
{{- $ := .ctx -}}
{{- $v := $.Values -}}
restartPolicy: Never
{{- with .activeDeadlineSeconds }}
activeDeadlineSeconds: {{ . }}
{{- end }}
serviceAccountName: {{ include "kmirror.validation.serviceAccountName" $ }}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with (include "kmirror.imagePullSecrets" $) }}
imagePullSecrets:
{{- . | trim | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeAffinity }}
affinity:
  nodeAffinity:
    {{- toYaml . | nindent 4 }}
{{- end }}
containers:
  - name: validate
    image: {{ include "kmirror.validation.image" $ | quote }}
    imagePullPolicy: {{ $v.validation.image.pullPolicy }}
    args:
      {{- include "kmirror.validation.args" (dict "ctx" $ "hook" .hook) | nindent 6 }}
    envFrom:
      - configMapRef:
          name: {{ include "kmirror.fullname" $ }}
    {{- $env := include "kmirror.secretEnv" $ }}
    {{- if or $env $v.validation.extraEnv }}
    env:
      {{- with $env }}{{ . | trim | nindent 6 }}{{ end }}
      {{- with $v.validation.extraEnv }}{{ toYaml . | nindent 6 }}{{ end }}
    {{- end }}
    {{- with $v.validation.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    securityContext:
      {{- toYaml $v.containerSecurityContext | nindent 6 }}
    terminationMessagePolicy: FallbackToLogsOnError
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      {{- with (include "kmirror.secretVolumeMounts" $) }}{{ . | trim | nindent 6 }}{{ end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ $v.validation.tmpSizeLimit }}
  {{- with (include "kmirror.secretVolumes" $) }}{{ . | trim | nindent 2 }}{{ end }}
{{- end -}}
