{{/* vim: set filetype=mustache: */}}

{{/* The source and target clusters, whichever values style (explicit or KUDO) set them. */}}

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

{{/* The sides with their values, for ranging: list of dict(side, prefix, c). */}}
{{- define "kmirror.sides" -}}
{{- $cl := include "kmirror.clusters" . | fromYaml -}}
- {side: source, prefix: SOURCE_CLUSTER, c: {{ $cl.source | toJson }}}
- {side: target, prefix: SINK_CLUSTER, c: {{ $cl.target | toJson }}}
{{- end -}}
