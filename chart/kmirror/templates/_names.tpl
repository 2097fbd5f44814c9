{{/* vim: set filetype=mustache: */}}

{{/* Resource names and the ServiceAccounts the pods run as. */}}

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
