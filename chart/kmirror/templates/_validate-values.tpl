{{/*
Semantic checks the schema cannot express. Every message names the value to set; all problems
are reported at once. values.schema.json catches types, enums and ranges before this runs.
*/}}
{{- define "kmirror.validateValues" -}}
{{- $messages := list -}}
{{- $style := include "kmirror.validateValues.clusterStyle" . | trim -}}
{{- $messages = append $messages $style -}}
{{- if not $style }}{{/* the per-side checks would only repeat the style problem */}}
{{- $messages = append $messages (include "kmirror.validateValues.clusters" .) -}}
{{- end -}}
{{- $messages = append $messages (include "kmirror.validateValues.extraProperties" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.extraEnv" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.affinity" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.pdb" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.monitoring" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.validation" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.mirrorMode" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.prometheusRule" .) -}}
{{- $messages = append $messages (include "kmirror.validateValues.control" .) -}}
{{- $trimmed := list -}}
{{- range $messages }}{{ with trim . }}{{ $trimmed = append $trimmed . }}{{ end }}{{ end -}}
{{- $message := join "\n" $trimmed -}}
{{- if $message -}}
{{- printf "\nVALUES VALIDATION:\n%s" $message | fail -}}
{{- end -}}
{{- end -}}

{{- define "kmirror.validateValues.clusterStyle" -}}
{{- $v := .Values -}}
{{- $rules := include "kmirror.rules" . | fromJson -}}
{{- $kudo := or (include "kmirror.blockSet" (list $rules $v.thisCluster)) (include "kmirror.blockSet" (list $rules $v.external)) -}}
{{- $explicit := or (include "kmirror.blockSet" (list $rules $v.source)) (include "kmirror.blockSet" (list $rules $v.target)) -}}
{{- if and (or $kudo $v.external.clusterType) $explicit }}
kmirror: external / thisCluster combined with source / target
    Configure the clusters one way only: either the KUDO way (thisCluster.* + external.* with
    external.clusterType) or explicitly (source.* + target.*). Remove the other block's settings.
{{- else if and $kudo (not $v.external.clusterType) }}
kmirror: external.clusterType
    The KUDO-style cluster settings need external.clusterType: SOURCE (mirror external -> this
    cluster) or DESTINATION (mirror this cluster -> external).
{{- end }}
{{- end -}}

{{/*
The clusters the mirror needs when it runs (values.schema.json, generated from the image's model,
has checked each block's form and security settings), and not one cluster onto itself. The
entrypoint refuses empty bootstrap servers too; this says so at install time, with the value to
set, only when the mirror runs (replicaCount, mm2Config: the schema does not know).
*/}}
{{- define "kmirror.validateValues.clusters" -}}
{{- $enabled := and (gt (int .Values.replicaCount) 0) (not .Values.mm2Config.enabled) -}}
{{- $kind := .Values.external.clusterType -}}
{{- range (include "kmirror.sides" . | fromYamlArray) }}
{{- if and $enabled (not .c.bootstrapServers) }}
kmirror: {{ .from }}.bootstrapServers
{{- if $kind }}
    The {{ .side }} cluster is {{ .from }} (external.clusterType={{ $kind }}) and has
    no bootstrap servers: set {{ .from }}.bootstrapServers to host:port[,host:port], or
    replicaCount: 0 to disable the mirror.
{{- else }}
    No {{ .side }} cluster: set {{ .from }}.bootstrapServers to host:port[,host:port] (or use
    thisCluster.bootstrapServers + external.bootstrapServers + external.clusterType), or
    replicaCount: 0 to disable the mirror.
{{- end }}
{{- end }}
{{- end }}
{{- $cl := include "kmirror.clusters" . | fromYaml -}}
{{- if and $cl.source.bootstrapServers (eq ($cl.source.bootstrapServers | toString) ($cl.target.bootstrapServers | toString)) (eq .Values.rename.policy "identity") }}
kmirror: {{ $cl.target.from }}.bootstrapServers
    Source and target are the same cluster ({{ $cl.source.bootstrapServers }}) and rename.policy is
    identity: every record would be copied onto itself. Point {{ $cl.target.from }} at another
    cluster, or set rename.policy: prefix.
{{- end }}
{{- end -}}

{{/* Credentials and connection settings never go through extra properties (they would land in a ConfigMap). */}}
{{- define "kmirror.validateValues.extraProperties" -}}
{{- $rules := include "kmirror.rules" $ | fromJson -}}
{{- range $what := list "extraConsumerProperties" "extraProducerProperties" }}
{{- range $k, $_ := (get $.Values $what) }}
{{- if or (include "kmirror.credential" (list $rules $k)) (regexMatch "^(sasl\\.|ssl\\.|security\\.protocol$|bootstrap\\.servers$|group\\.id$)" $k) }}
kmirror: {{ $what }}.{{ $k }}
    {{ $k }} cannot be set here: extra properties are stored in a ConfigMap. Connection and
    security settings come from source.* / target.* (or thisCluster.* / external.*): securityProtocol,
    sasl.existingSecret and the tls secrets; the consumer group from consumerGroup.
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* extraEnv must not shadow what the chart sets from values. */}}
{{- define "kmirror.validateValues.extraEnv" -}}
{{- $rules := include "kmirror.rules" . | fromJson -}}
{{- $managed := keys (include "kmirror.configEnv" . | fromYaml) -}}
{{- range (include "kmirror.sideVars" . | fromYamlArray) }}{{ $managed = append $managed .name }}{{ end -}}
{{- range $what := list "extraEnv" "validation.extraEnv" }}
{{- $list := ternary $.Values.extraEnv $.Values.validation.extraEnv (eq $what "extraEnv") -}}
{{- range $list }}
{{- if has .name $managed }}
kmirror: {{ $what }}
    {{ .name }} is set by the chart from its values: change the matching value instead (see the
    chart README, "Environment of the mirror").
{{- else if and (hasKey . "value") (include "kmirror.credential" (list $rules (.name | toString))) }}
kmirror: {{ $what }}
    {{ .name }} looks like a credential but has a literal value: take it from a Secret with
    valueFrom.secretKeyRef instead.
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* "true" when a key or variable name holds a credential (the image's config.secret.is_secret_key, in rules.json). */}}
{{- define "kmirror.credential" -}}
{{- $rules := index . 0 }}{{ $name := index . 1 -}}
{{- if and (regexMatch $rules.credential $name) (not (regexMatch $rules.notCredential $name)) }}true{{ end -}}
{{- end -}}

{{- define "kmirror.validateValues.affinity" -}}
{{- if and .Values.nodeAffinity .Values.affinity.nodeAffinity }}
kmirror: nodeAffinity
    nodeAffinity and affinity.nodeAffinity are both set: keep one of them.
{{- end }}
{{- end -}}

{{- define "kmirror.validateValues.pdb" -}}
{{- if .Values.pdb.create }}
{{- $min := .Values.pdb.minAvailable | toString -}}
{{- $max := .Values.pdb.maxUnavailable | toString -}}
{{- if and (ne $min "") (ne $max "") }}
kmirror: pdb.minAvailable / pdb.maxUnavailable
    Set only one of pdb.minAvailable and pdb.maxUnavailable (set the other to "").
{{- else if and (eq $min "") (eq $max "") }}
kmirror: pdb.maxUnavailable
    pdb.create is true: set pdb.maxUnavailable (e.g. 1) or pdb.minAvailable.
{{- end }}
{{- end }}
{{- end -}}

{{- define "kmirror.validateValues.monitoring" -}}
{{- if and .Values.serviceMonitor.enabled .Values.podMonitor.enabled }}
kmirror: serviceMonitor.enabled / podMonitor.enabled
    Enable either the ServiceMonitor or the PodMonitor, not both (every series would be scraped twice).
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.service.enabled) }}
kmirror: service.enabled
    serviceMonitor.enabled needs the metrics Service: set service.enabled: true, or use podMonitor.
{{- end }}
{{- end -}}

{{- define "kmirror.validateValues.validation" -}}
{{- $val := .Values.validation -}}
{{- $wait := int64 $val.waitTimeoutSeconds -}}
{{- $hookWait := int64 $val.hook.waitTimeoutSeconds -}}
{{- if and $val.hook.enabled (le (int64 $val.hook.activeDeadlineSeconds) $hookWait) }}
kmirror: validation.hook.activeDeadlineSeconds
    The hook Job would be killed before it finishes waiting: set
    validation.hook.activeDeadlineSeconds above validation.hook.waitTimeoutSeconds ({{ $hookWait }}) plus
    Spark's start-up time (a few minutes more is safe).
{{- end }}
{{- if and $val.test.enabled (le (int64 $val.test.activeDeadlineSeconds) $wait) }}
kmirror: validation.test.activeDeadlineSeconds
    The test pod would be killed before it finishes waiting: set
    validation.test.activeDeadlineSeconds above validation.waitTimeoutSeconds ({{ $wait }}).
{{- end }}
{{- end -}}

{{/* mm2Config mode: one source for the file, and no value that the file would contradict. */}}
{{- define "kmirror.validateValues.mirrorMode" -}}
{{- $v := .Values -}}
{{- $m := $v.mm2Config -}}
{{- if $m.enabled }}
{{- if eq (len (compact (list $m.existingConfigMap $m.existingSecret))) 2 }}
kmirror: mm2Config.existingConfigMap / mm2Config.existingSecret
    Both are set: keep the one that holds your mm2.properties (a Secret when it has credentials).
{{- else if not (or $m.existingConfigMap $m.existingSecret) }}
kmirror: mm2Config.existingSecret
    mm2Config.enabled needs your mm2.properties: set mm2Config.existingSecret (or
    mm2Config.existingConfigMap) to the object holding it under the key mm2Config.key ({{ $m.key }}).
{{- end }}
{{- $fixed := dict "whitelist" (list (ne ($v.whitelist | toString) ".*") "<flow>.topics") "blacklist" (list (ne ($v.blacklist | toString) "") "<flow>.topics.exclude") "numStreams" (list (ne (int $v.numStreams) 1) "tasks.max") "offsetCommitIntervalMs" (list (ne (int64 $v.offsetCommitIntervalMs) 60000) "offset.flush.interval.ms") "rename" (list (or (ne $v.rename.policy "identity") (ne $v.rename.sourceAlias "source") (ne ($v.rename.map | toString) "") (ne ($v.rename.rules | toString) "")) "replication.policy.class, the cluster aliases and kmirror.topic.map / kmirror.topic.rules") "partitioning" (list (ne $v.partitioning "same") "(no MM2 setting: kmirror keeps partition numbers)") "replicationFactor" (list (ne (int $v.replicationFactor) -1) "replication.factor") "extraConsumerProperties" (list (not (empty $v.extraConsumerProperties)) "<alias>.consumer.* keys") "extraProducerProperties" (list (not (empty $v.extraProducerProperties)) "<alias>.producer.* keys") -}}
{{- range $name, $entry := $fixed }}
{{- if index $entry 0 }}
kmirror: {{ $name }}
    mm2Config.enabled: the mirror runs your mm2.properties, where this is set with
    {{ index $entry 1 }}. Remove {{ $name }} from your values.
{{- end }}
{{- end }}
{{- $np := $v.networkPolicy -}}
{{- $cl := include "kmirror.clusters" . | fromYaml -}}
{{- if and $np.enabled (not $np.allowExternalEgress) (not $np.extraEgress) (not (and $cl.source.bootstrapServers $cl.target.bootstrapServers)) }}
kmirror: networkPolicy.extraEgress
    mm2Config.enabled with networkPolicy.allowExternalEgress: false: the chart cannot read the
    brokers' ports from mm2.properties. Allow them with networkPolicy.extraEgress (or set
    source/target bootstrapServers, whose ports are allowed, or allowExternalEgress: true).
{{- end }}
{{- if and (gt (int $v.replicaCount) 0) (include "kmirror.validation.active" .) }}
{{- if or (not $cl.source.bootstrapServers) (not $cl.target.bootstrapServers) }}
kmirror: {{ $cl.source.from }}.bootstrapServers / {{ $cl.target.from }}.bootstrapServers
    mm2Config.enabled: the validation pods (helm test, post-install hook) do not read
    mm2.properties; give them the flow's clusters with {{ $cl.source.from }}.* and {{ $cl.target.from }}.*
    (bootstrap servers and security), or set validation.test.enabled and
    validation.hook.enabled to false.
{{- end }}
{{- if not $v.validation.topics }}
kmirror: validation.topics
    mm2Config.enabled: set validation.topics to the regex of the flow's topics (and, with
    MirrorMaker 2's prefixed target names, the matching validation.extraArgs), or set
    validation.test.enabled and validation.hook.enabled to false.
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "kmirror.validateValues.prometheusRule" -}}
{{- $r := .Values.prometheusRule -}}
{{- if and $r.enabled (not (or .Values.serviceMonitor.enabled .Values.podMonitor.enabled)) (not $r.selector) }}
kmirror: prometheusRule.selector
    prometheusRule.enabled without serviceMonitor.enabled or podMonitor.enabled: the default
    selector (namespace and job of those monitors) would match nothing. Enable one of them, or set
    prometheusRule.selector to the labels your Prometheus scrapes kmirror with, e.g.
    job="kmirror".
{{- end }}
{{- if and $r.enabled .Values.mm2Config.enabled (not (int $r.commitIntervalSeconds)) $r.alerts.noCommit.enabled }}
kmirror: prometheusRule.commitIntervalSeconds
    mm2Config.enabled: the commit interval is your mm2.properties' offset.flush.interval.ms;
    set prometheusRule.commitIntervalSeconds to it (in seconds) for the KmirrorNoCommit alert.
{{- end }}
{{- end -}}

{{/* The control API needs its token. */}}
{{- define "kmirror.validateValues.control" -}}
{{- if and .Values.control.enabled (not .Values.control.existingSecret) }}
kmirror: control.existingSecret
    control.enabled needs the API's bearer token: create a Secret holding it (e.g. kubectl
    create secret generic kmirror-control --from-literal=token=$(openssl rand -hex 32)) and
    set control.existingSecret to its name (the key: control.tokenKey, default token).
{{- end }}
{{- end -}}
