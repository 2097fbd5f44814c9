{{/* vim: set filetype=mustache: */}}

{{/* The non-secret environment of the image's entrypoint: what the ConfigMap holds. */}}

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
{{- $v := .Values -}}
{{- /* The sides' variables (_clusters.tpl); passwords only as *_FILE paths of mounted keys. */}}
{{- range (include "kmirror.sideVars" . | fromYamlArray) }}
{{- if ne .kind "secretEnv" }}
{{ .name }}: {{ .value | default .path | quote }}
{{- end }}
{{- end }}
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
{{- with $v.rename.map }}
KMIRROR_TOPIC_MAP: {{ . | toString | quote }}
{{- end }}
{{- with $v.rename.rules }}
KMIRROR_TOPIC_RULES: {{ . | toString | quote }}
{{- end }}
KMIRROR_TOPIC_MAPPING_PREFIX: {{ $v.rename.mappingPrefix | toString | quote }}
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
{{- with $v.acls }}
KMIRROR_SYNC_TOPIC_ACLS: {{ .sync | toString | quote }}
KMIRROR_SYNC_TOPIC_ACLS_INTERVAL_SECONDS: {{ .intervalSeconds | toString | quote }}
KMIRROR_ACL_SCOPE: {{ .scope | quote }}
{{- with .principalMap }}
KMIRROR_ACL_PRINCIPAL_MAP: {{ . | toString | quote }}
{{- end }}
KMIRROR_ACL_DENY_WRITE: {{ .denyWrite | toString | quote }}
{{- with .mirrorPrincipal }}
KMIRROR_ACL_MIRROR_PRINCIPAL: {{ . | quote }}
{{- end }}
{{- end }}
{{- with $v.schemaRegistry }}
{{- if or .source.url .target.url }}
KMIRROR_SCHEMA_ID_MODE: {{ .idMode | quote }}
KMIRROR_SCHEMA_SUBJECTS: {{ .subjects | toString | quote }}
{{- with .subjectsExclude }}
KMIRROR_SCHEMA_SUBJECTS_EXCLUDE: {{ . | toString | quote }}
{{- end }}
KMIRROR_SCHEMA_SYNC_INTERVAL_S: {{ .syncIntervalSeconds | toString | quote }}
KMIRROR_SCHEMA_UNKNOWN_ID: {{ .unknownId | quote }}
{{- end }}
{{- end }}
KMIRROR_PARTITIONING: {{ $v.partitioning | quote }}
KMIRROR_ENGINE: {{ $v.engine | quote }}
KMIRROR_REPLICATION_FACTOR: {{ $v.replicationFactor | int64 | toString | quote }}
KMIRROR_SYNC_TOPIC_CONFIGS_INTERVAL_S: {{ $v.syncTopicConfigsIntervalSeconds | int64 | toString | quote }}
{{- with $v.progressTopic }}
KMIRROR_PROGRESS_TOPIC: {{ . | quote }}
{{- end }}
KMIRROR_METRICS_PORT: {{ $v.metrics.port | int64 | toString | quote }}
{{- if $v.metrics.mm2Names }}
KMIRROR_MM2_METRIC_NAMES: "true"
{{- end }}
{{- with $v.throttle }}
KMIRROR_THROTTLE: {{ . | quote }}
{{- end }}
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
