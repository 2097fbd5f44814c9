{{/* vim: set filetype=mustache: */}}

{{/* The non-secret environment of the image's entrypoint: what the ConfigMap holds. */}}

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
