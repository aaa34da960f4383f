{{/*
Labels of every object of the chart. app.kubernetes.io/name is the label that
config/default puts on every object; the ServiceMonitor selects on it.
*/}}
{{- define "ownergc.labels" -}}
app.kubernetes.io/name: ownergc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The manager pods' labels and the Deployment's selector, as in config/manager:
a selector cannot change on upgrade, so it carries nothing release-specific.
*/}}
{{- define "ownergc.selectorLabels" -}}
app.kubernetes.io/name: ownergc
control-plane: controller-manager
{{- end }}
