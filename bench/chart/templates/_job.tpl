{{- /* The Job of one action request (one node, `args` or `shell` command, PVC mounts), the same
objects as `tao-k8s render` prints for it. */ -}}
{{- define "tao.labels" -}}
{{- $labels := dict -}}
{{- range $k, $v := (.metadata.labels | default dict) }}{{ $_ := set $labels $k $v }}{{ end -}}
{{- $_ := set $labels "app.kubernetes.io/component" .spec.action -}}
{{- $_ := set $labels "app.kubernetes.io/instance" .metadata.name -}}
{{- $_ := set $labels "app.kubernetes.io/managed-by" "tao-k8s" -}}
{{- $_ := set $labels "app.kubernetes.io/name" "tao" -}}
{{- $_ := set $labels "tao-k8s.io/network-arch" .spec.networkArch -}}
{{- toJson $labels -}}
{{- end -}}

{{- define "tao.job" -}}
{{- $spec := .spec -}}
{{- $res := $spec.resources | default dict -}}
{{- if gt (int ($res.nodes | default 1)) 1 }}{{ fail "only one-node requests" }}{{ end -}}
{{- $gpus := int ($res.gpusPerNode | default 0) -}}
{{- $requests := dict -}}
{{- if hasKey $res "cpu" }}{{ $_ := set $requests "cpu" (toString $res.cpu) }}{{ end -}}
{{- if hasKey $res "memory" }}{{ $_ := set $requests "memory" (toString $res.memory) }}{{ end -}}
{{- $limits := deepCopy $requests -}}
{{- if $gpus }}{{ $_ := set $limits "nvidia.com/gpu" (toString $gpus) }}{{ end -}}
{{- $argv := list -}}
{{- $args := list -}}
{{- if $spec.command.args -}}
{{- $argv = list (first $spec.command.args) -}}
{{- $args = rest $spec.command.args -}}
{{- else if $spec.command.shell -}}
{{- $argv = list "/bin/sh" "-c" $spec.command.shell -}}
{{- else }}{{ fail "only `args` and `shell` commands" }}{{ end -}}
{{- $labels := include "tao.labels" . -}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .metadata.name | quote }}
  namespace: {{ .metadata.namespace | default "default" | quote }}
  labels: {{ $labels }}
spec:
  backoffLimit: {{ $spec.backoffLimit | default 0 | int }}
  ttlSecondsAfterFinished: {{ $spec.ttlSecondsAfterFinished | default 604800 | int }}
  template:
    metadata:
      labels: {{ $labels }}
    spec:
      restartPolicy: Never
      {{- if $gpus }}
      tolerations:
        - {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
      {{- end }}
      imagePullSecrets:
      {{- range ($spec.imagePullSecrets | default (list (printf "%s-ngc" .metadata.name))) }}
        - name: {{ . | quote }}
      {{- end }}
      containers:
        - name: "tao"
          image: {{ $spec.image | quote }}
          command: {{ toJson $argv }}
          {{- if $args }}
          args: {{ toJson $args }}
          {{- end }}
          {{- if $spec.env }}
          env:
          {{- range $k, $v := $spec.env }}
            - name: {{ $k | quote }}
              value: {{ toString $v | quote }}
          {{- end }}
          {{- end }}
          resources:
            limits: {{ toJson $limits }}
            requests: {{ toJson $requests }}
          volumeMounts:
          {{- range $spec.storage.mounts }}
            - name: {{ .name | quote }}
              mountPath: {{ .mountPath | quote }}
              {{- if .subPath }}
              subPath: {{ .subPath | quote }}
              {{- end }}
              {{- if .readOnly }}
              readOnly: true
              {{- end }}
          {{- end }}
      volumes:
      {{- range $spec.storage.mounts }}
        - name: {{ .name | quote }}
          persistentVolumeClaim:
            claimName: {{ .persistentVolumeClaim | quote }}
            {{- if .readOnly }}
            readOnly: true
            {{- end }}
      {{- end }}
{{- end -}}
