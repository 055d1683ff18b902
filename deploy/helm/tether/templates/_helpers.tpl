{{/* The chart's name, and the release's name for its objects (63 characters at most). */}}
{{- define "tether.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tether.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tether.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tether.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tether.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "tether.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Secret holding the credentials: the user's, or the chart's. */}}
{{- define "tether.secretName" -}}
{{- default (include "tether.fullname" .) .Values.auth.existingSecret -}}
{{- end -}}

{{/* Fails on values that cannot make a working server, saying what to set. */}}
{{- define "tether.validate" -}}
{{- if not (has .Values.store (list "badger" "etcd" "postgres")) -}}
{{- fail (printf "store must be badger, etcd or postgres, not %q" .Values.store) -}}
{{- end -}}
{{- if and (eq .Values.store "postgres") (empty .Values.postgres.existingSecret) -}}
{{- fail "store postgres needs postgres.existingSecret: a Secret holding the PostgreSQL URL (key postgres.urlKey)" -}}
{{- end -}}
{{- if and (eq .Values.store "etcd") (empty .Values.etcd.endpoints) -}}
{{- fail "store etcd needs etcd.endpoints: the client URLs of an existing etcd cluster" -}}
{{- end -}}
{{- if and (ne .Values.store "badger") (lt (int .Values.replicaCount) 1) -}}
{{- fail "replicaCount must be at least 1" -}}
{{- end -}}
{{- if and .Values.metrics.port (or (lt (int .Values.metrics.port) 1) (gt (int .Values.metrics.port) 65535) (eq (int .Values.metrics.port) 36725)) -}}
{{- fail (printf "metrics.port must be a port from 1 to 65535 other than 36725 (the API's), or 0 for none, not %v" .Values.metrics.port) -}}
{{- end -}}
{{- if le (int .Values.terminationGracePeriodSeconds) 30 -}}
{{- fail "terminationGracePeriodSeconds must be above 30: the server drains for up to 30 s on SIGTERM" -}}
{{- end -}}
{{- end -}}

{{/* The server container, the same in both shapes but for the store's settings. */}}
{{- define "tether.container" -}}
- name: tether
  image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args: [serve]
  ports:
    - name: http
      containerPort: 36725
      protocol: TCP
    {{- if .Values.metrics.port }}
    - name: metrics
      containerPort: {{ .Values.metrics.port }}
      protocol: TCP
    {{- end }}
  env:
    - name: TETHER_ADDR
      value: "0.0.0.0:36725"
    {{- if .Values.metrics.port }}
    - name: TETHER_METRICS_ADDR
      value: "0.0.0.0:{{ .Values.metrics.port }}"
    {{- end }}
    - name: TETHER_LOG_FORMAT
      value: {{ .Values.logFormat | quote }}
    - name: TETHER_LOG_LEVEL
      value: {{ .Values.logLevel | quote }}
    - name: TETHER_JWT_SECRET
      valueFrom:
        secretKeyRef:
          name: {{ include "tether.secretName" . }}
          key: {{ .Values.auth.jwtSecretKey }}
    - name: TETHER_OPERATOR_TOKENS
      valueFrom:
        secretKeyRef:
          name: {{ include "tether.secretName" . }}
          key: {{ .Values.auth.operatorTokensKey }}
          optional: true
    - name: TETHER_METRICS_TOKENS
      valueFrom:
        secretKeyRef:
          name: {{ include "tether.secretName" . }}
          key: {{ .Values.auth.metricsTokenKey }}
          optional: true
    {{- if eq .Values.store "etcd" }}
    - name: TETHER_STORE
      value: etcd
    - name: TETHER_ETCD_ENDPOINTS
      value: {{ join "," .Values.etcd.endpoints | quote }}
    - name: TETHER_ETCD_PREFIX
      value: {{ .Values.etcd.prefix | quote }}
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: TETHER_ADVERTISE_URL
      value: "http://$(POD_IP):36725"
    {{- with .Values.etcd.existingSecret }}
    - name: TETHER_ETCD_USERNAME
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: username
    - name: TETHER_ETCD_PASSWORD
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: password
    {{- end }}
    {{- else if eq .Values.store "postgres" }}
    - name: TETHER_STORE
      value: postgres
    - name: TETHER_POSTGRES_URL
      valueFrom:
        secretKeyRef:
          name: {{ .Values.postgres.existingSecret }}
          key: {{ .Values.postgres.urlKey }}
    - name: TETHER_POSTGRES_SCHEMA
      value: {{ .Values.postgres.schema | quote }}
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: TETHER_ADVERTISE_URL
      value: "http://$(POD_IP):36725"
    {{- else }}
    - name: TETHER_DATA_DIR
      value: /data
    {{- end }}
    {{- range $name, $value := .Values.env }}
    - name: {{ $name }}
      value: {{ $value | toString | quote }}
    {{- end }}
  startupProbe:
    httpGet:
      path: /health
      port: http
    periodSeconds: {{ .Values.probes.startup.periodSeconds }}
    failureThreshold: {{ .Values.probes.startup.failureThreshold }}
  readinessProbe:
    httpGet:
      path: /ready
      port: http
    periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
    failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
  livenessProbe:
    httpGet:
      path: /health
      port: http
    periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
    failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
    {{- if eq .Values.store "badger" }}
    - name: data
      mountPath: /data
    {{- end }}
{{- end -}}

{{/* The pod's settings beside its container. */}}
{{- define "tether.podSpec" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
automountServiceAccountToken: false
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
containers:
  {{- include "tether.container" . | nindent 2 }}
volumes:
  - name: tmp
    emptyDir: {}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "tether.podMetadata" -}}
labels:
  {{- include "tether.selectorLabels" . | nindent 2 }}
  {{- with .Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  {{- if not .Values.auth.existingSecret }}
  checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
  {{- end }}
  {{- with .Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}
