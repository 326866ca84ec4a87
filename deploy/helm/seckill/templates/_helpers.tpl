{{/* Names and labels. */}}
{{- define "seckill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "seckill.fullname" -}}
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

{{- define "seckill.selectorLabels" -}}
app.kubernetes.io/name: {{ include "seckill.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The pods of the Deployment (the migration Job's are component migrate). */}}
{{- define "seckill.serverLabels" -}}
{{ include "seckill.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "seckill.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "seckill.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "seckill.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
The settings that hold a secret: never in the ConfigMap, only read from
secrets.existingSecret through secrets.keys.
*/}}
{{- define "seckill.secretSettings" -}}
admin.token mysql.dsn redis.password auth.jwt_secret payment.webhook_secret events.webhook_secret room.pass_keys payment.stripe.secret_key payment.stripe.webhook_secret payment.alipay.public_key payment.wechatpay.api_v3_key payment.wechatpay.platform_public_key events.kafka_sasl_password events.amqp_url
{{- end -}}

{{/*
The configuration file: .Values.config with the chart's http.addr, after
checking that it holds no secret and that the pods will share Redis and
MySQL.
*/}}
{{- define "seckill.configFile" -}}
{{- $config := deepCopy (.Values.config | default dict) -}}
{{- range $setting := splitList " " (include "seckill.secretSettings" .) -}}
{{- $value := $config -}}
{{- range $part := splitList "." $setting -}}
{{- if kindIs "map" $value -}}
{{- $value = get $value $part -}}
{{- else -}}
{{- $value = "" -}}
{{- end -}}
{{- end -}}
{{- if $value -}}
{{- fail (printf "config.%s is a secret: put it in the Secret secrets.existingSecret and name its key in secrets.keys.%s" $setting $setting) -}}
{{- end -}}
{{- end -}}
{{- $redis := get $config "redis" | default dict -}}
{{- if not (get $redis "addrs") -}}
{{- fail "config.redis.addrs is empty: the pods must share one Redis (without it each runs an in-process Redis of its own)" -}}
{{- end -}}
{{- if not (get (.Values.secrets.keys | default dict) "mysql.dsn") -}}
{{- fail "secrets.keys.mysql.dsn is empty: the pods must share one MySQL (without it each keeps its orders in a SQLite database of its own)" -}}
{{- end -}}
{{- $http := get $config "http" | default dict -}}
{{- $_ := set $http "addr" (printf ":%d" (int .Values.containerPort)) -}}
{{- $_ := set $config "http" $http -}}
{{- toYaml $config -}}
{{- end -}}

{{/* The settings read from the Secret, as environment variables. */}}
{{- define "seckill.secretEnv" -}}
{{- $secret := .Values.secrets.existingSecret -}}
{{- range $setting, $key := .Values.secrets.keys }}
{{- if $key }}
{{- if not $secret }}
{{- fail (printf "secrets.keys.%s names a key, but secrets.existingSecret names no Secret" $setting) }}
{{- end }}
- name: {{ printf "SECKILL_%s" ($setting | replace "." "_" | upper) }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $key }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes every seckill pod mounts: the configuration and /tmp. */}}
{{- define "seckill.volumeMounts" -}}
- name: config
  mountPath: /etc/seckill
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "seckill.podSecurity" -}}
{{- with .Values.serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
