{{/* vim: set filetype=mustache: */}}

{{/* --------------------------------------------------------------- alert rules */}}

{{/* PromQL label matchers of this release's series (without braces). */}}
{{- define "kmirror.alertSelector" -}}
{{- .Values.prometheusRule.selector | default (printf "namespace=%q,job=%q" (include "kmirror.namespace" .) .Release.Name) -}}
{{- end -}}

{{/* The commit interval the alerts assume, in whole seconds (at least 1). */}}
{{- define "kmirror.alertCommitInterval" -}}
{{- $s := int64 .Values.prometheusRule.commitIntervalSeconds -}}
{{- if not $s }}{{ $s = max 1 (div (int64 .Values.offsetCommitIntervalMs) 1000) }}{{ end -}}
{{- $s -}}
{{- end -}}

{{/*
The `groups:` of the PrometheusRule (the spec of a Prometheus rule file). tests/chart/
test_alerts.py feeds them to `promtool test rules` with series that must and must not fire.
Every alert carries the series' namespace and job, a summary, a description and what to do.
*/}}
{{- define "kmirror.alertRules" -}}
{{- $r := .Values.prometheusRule -}}
{{- $a := $r.alerts -}}
{{- $sel := include "kmirror.alertSelector" . -}}
{{- $commit := include "kmirror.alertCommitInterval" . | int64 -}}
{{- /* Lag is measured to the committed offset: it climbs for one commit interval and drops at
each commit. Comparing the lowest lag of the last two intervals with the highest of the two
before tells a mirror that falls behind from that saw-tooth. */ -}}
{{- $window := printf "%ds" (mul 2 (max $commit 30)) -}}
{{- $extra := $r.additionalLabels -}}
groups:
  - name: kmirror
    rules:
      {{- if $a.lagGrowing.enabled }}
      - alert: KmirrorLagGrowing
        expr: |-
          count by (namespace, job, topic) (
            min_over_time(kmirror_mirror_lag_records{ {{- $sel -}} }[{{ $window }}])
              > max_over_time(kmirror_mirror_lag_records{ {{- $sel -}} }[{{ $window }}] offset {{ $window }})
          )
        for: {{ $a.lagGrowing.for }}
        labels:
          severity: {{ $a.lagGrowing.severity }}
          {{- with $extra }}{{ toYaml . | nindent 10 }}{{ end }}
        annotations:
          summary: "kmirror falls behind on {{ "{{" }} $labels.topic {{ "}}" }}"
          description: >-
            The lag of {{ "{{" }} $value {{ "}}" }} partition(s) of topic {{ "{{" }} $labels.topic {{ "}}" }} ({{ "{{" }} $labels.namespace {{ "}}" }}/{{ "{{" }} $labels.job {{ "}}" }})
            has kept rising for {{ $a.lagGrowing.for }}, beyond the rise and fall of each commit: the source
            gets records faster than the mirror copies them, or the mirror is stuck.
          action: >-
            Check the pods' logs and the "Records / s" and "Send errors" panels; raise numStreams or
            replicaCount (up to the number of partitions) if the mirror is busy but too slow.
      {{- end }}
      {{- if $a.noCommit.enabled }}
      - alert: KmirrorNoCommit
        expr: |-
          max by (namespace, job, instance, stream) (kmirror_mirror_seconds_since_last_commit{ {{- $sel -}} })
            > {{ mul $a.noCommit.intervals $commit }}
          and on (namespace, job, instance, stream)
          sum by (namespace, job, instance, stream) (kmirror_mirror_lag_records{ {{- $sel -}} }) > 0
        for: 1m
        labels:
          severity: {{ $a.noCommit.severity }}
          {{- with $extra }}{{ toYaml . | nindent 10 }}{{ end }}
        annotations:
          summary: "kmirror stream {{ "{{" }} $labels.stream {{ "}}" }} of {{ "{{" }} $labels.instance {{ "}}" }} does not commit"
          description: >-
            Stream {{ "{{" }} $labels.stream {{ "}}" }} has records to copy but has not committed its source
            offsets for {{ "{{" }} $value | humanizeDuration {{ "}}" }} ({{ $a.noCommit.intervals }} commit intervals of {{ $commit }}s):
            its progress is not recorded, and a restart would copy everything since the last commit again.
          action: >-
            A commit waits for the target to acknowledge every record sent: look for send errors and
            "not committing" warnings in the pod's log, and at the target cluster's health.
      {{- end }}
      {{- if $a.sendErrors.enabled }}
      - alert: KmirrorSendErrors
        expr: |-
          sum by (namespace, job, error) (
            (kmirror_mirror_send_errors_total{ {{- $sel -}} } unless kmirror_mirror_send_errors_total{ {{- $sel -}} } offset {{ $a.sendErrors.window }})
            or increase(kmirror_mirror_send_errors_total{ {{- $sel -}} }[{{ $a.sendErrors.window }}])
          ) > 0
        labels:
          severity: {{ $a.sendErrors.severity }}
          {{- with $extra }}{{ toYaml . | nindent 10 }}{{ end }}
        annotations:
          summary: "The target refused records ({{ "{{" }} $labels.error {{ "}}" }})"
          description: >-
            The target cluster refused about {{ "{{" }} $value {{ "}}" }} record(s) with {{ "{{" }} $labels.error {{ "}}" }} in the last
            {{ $a.sendErrors.window }}. Nothing past them was committed: the mirror exits and restarts
            (abortOnSendFailure: true) or rewinds and sends again (false).
          action: >-
            The error names the cause (e.g. MSG_SIZE_TOO_LARGE: raise the target topic's
            max.message.bytes; TOPIC_AUTHORIZATION_FAILED: grant the mirror's user write access).
      {{- end }}
      {{- if and $a.mirrorDown.enabled (gt (int .Values.replicaCount) 0) }}{{/* 0: off on purpose */}}
      - alert: KmirrorDown
        expr: |-
          sum by (namespace, job) (up{ {{- $sel -}} }) == 0
          or absent(up{ {{- $sel -}} })
        for: {{ $a.mirrorDown.for }}
        labels:
          severity: {{ $a.mirrorDown.severity }}
          {{- with $extra }}{{ toYaml . | nindent 10 }}{{ end }}
        annotations:
          summary: "No kmirror pod is up ({{ $sel | replace "\"" "" }})"
          description: >-
            Prometheus has not scraped any pod of the mirror for {{ $a.mirrorDown.for }}: nothing is being
            copied. The pods are crash-looping, not scheduled, or not scraped.
          action: >-
            kubectl get pods and kubectl logs --previous on the mirror's pods; a configuration error
            exits with code 2 and names the value to fix.
      {{- end }}
      {{- if $a.heartbeatAge.enabled }}
      - alert: KmirrorHeartbeatStale
        expr: |-
          max by (namespace, job) (kmirror_dr_heartbeat_age_seconds{ {{- $sel -}} }) > {{ $a.heartbeatAge.maxAgeSeconds }}
        for: {{ $a.heartbeatAge.for }}
        labels:
          severity: {{ $a.heartbeatAge.severity }}
          {{- with $extra }}{{ toYaml . | nindent 10 }}{{ end }}
        annotations:
          summary: "No heartbeat crossed the mirror for {{ "{{" }} $value | humanizeDuration {{ "}}" }}"
          description: >-
            The newest heartbeat that reached the target is older than {{ $a.heartbeatAge.maxAgeSeconds }}s:
            replication is stalled end to end, even if no data flows.
          action: >-
            Check that heartbeats are emitted on the source and that the mirror copies the heartbeats topic.
      {{- end }}
{{- end -}}
