//! The API-validation oracle: what the Kubernetes API server refuses in a pod spec (and the
//! pod template of a Job) on create, against what `tao-k8s lint` reports.
//!
//! Every `fixtures/api-validation/*.yaml` holds one object with one violation the server refuses
//! (its header quotes the server's message and names the upstream function). Each is listed here
//! once: as covered (the rule code and JSON path lint reports it at) or as missed (the path the
//! server names, where lint must still report no error: when a rule starts catching one, this
//! test fails so that the case moves to `COVERED` and the README's table is updated). Every
//! `fixtures/api-validation/pass/*.yaml` is a near miss the server accepts: lint reports no error
//! there.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value as Json;

use common::ROOT;

const DIR: &str = "fixtures/api-validation";

/// Cases lint catches: (file stem, rule code, path of the error finding).
const COVERED: &[(&str, &str, &str)] = &[
    ("container-name-missing", "TK405", "spec.containers[0]"),
    (
        "container-name-not-dns-label",
        "TK405",
        "spec.template.spec.containers[0].name",
    ),
    (
        "container-name-duplicate-init",
        "TK405",
        "spec.containers[0].name",
    ),
    (
        "container-image-missing",
        "TK411",
        "spec.template.spec.containers[0].image",
    ),
    (
        "container-image-trailing-space",
        "TK411",
        "spec.containers[0].image",
    ),
    (
        "container-image-pull-policy",
        "TK201",
        "spec.template.spec.containers[0].imagePullPolicy",
    ),
    (
        "container-termination-message-policy",
        "TK201",
        "spec.template.spec.containers[0].terminationMessagePolicy",
    ),
    (
        "port-container-port-missing",
        "TK406",
        "spec.template.spec.containers[0].ports[0]",
    ),
    (
        "port-out-of-range",
        "TK406",
        "spec.template.spec.containers[0].ports[0].containerPort",
    ),
    (
        "port-name-too-long",
        "TK406",
        "spec.template.spec.containers[0].ports[0].name",
    ),
    (
        "port-name-duplicate",
        "TK406",
        "spec.template.spec.containers[0].ports[1].name",
    ),
    (
        "port-protocol-lowercase",
        "TK406",
        "spec.template.spec.containers[0].ports[0].protocol",
    ),
    (
        "port-host-port-conflict",
        "TK406",
        "spec.containers[1].ports[0].hostPort",
    ),
    (
        "env-name-empty",
        "TK407",
        "spec.template.spec.containers[0].env[0].name",
    ),
    (
        "env-name-equals",
        "TK407",
        "spec.template.spec.containers[0].env[0].name",
    ),
    (
        "env-name-leading-digit-1.31",
        "TK407",
        "spec.template.spec.containers[0].env[0].name",
    ),
    (
        "env-secret-key-missing",
        "TK201",
        "spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef",
    ),
    (
        "volume-name-not-dns-label",
        "TK409",
        "spec.template.spec.volumes[0].name",
    ),
    (
        "volume-name-duplicate",
        "TK409",
        "spec.template.spec.volumes[1].name",
    ),
    (
        "volume-two-sources",
        "TK409",
        "spec.template.spec.volumes[0].persistentVolumeClaim",
    ),
    (
        "volume-pvc-claim-name-missing",
        "TK201",
        "spec.template.spec.volumes[0].persistentVolumeClaim",
    ),
    (
        "volume-configmap-name-missing",
        "TK201",
        "spec.template.spec.volumes[0].configMap",
    ),
    (
        "mount-unknown-volume",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[0].name",
    ),
    (
        "mount-path-missing",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[0]",
    ),
    (
        "mount-path-duplicate",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[1].mountPath",
    ),
    (
        "mount-sub-path-absolute",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[0].subPath",
    ),
    (
        "mount-sub-path-backsteps",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[0].subPath",
    ),
    (
        "resources-request-above-limit",
        "TK408",
        "spec.template.spec.containers[0].resources.requests.memory",
    ),
    (
        "resources-gpu-fraction",
        "TK408",
        "spec.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]",
    ),
    (
        "resources-gpu-request-not-limit",
        "TK301",
        "spec.template.spec.containers[0].resources.requests[\"nvidia.com/gpu\"]",
    ),
    (
        "resources-gpu-request-without-limit",
        "TK301",
        "spec.template.spec.containers[0].resources.requests[\"nvidia.com/gpu\"]",
    ),
    (
        "resources-negative",
        "TK408",
        "spec.template.spec.containers[0].resources.requests.cpu",
    ),
    (
        "resources-not-a-quantity",
        "TK408",
        "spec.template.spec.containers[0].resources.limits.memory",
    ),
    (
        "pod-restart-policy-lowercase",
        "TK201",
        "spec.restartPolicy",
    ),
    (
        "job-restart-policy-always",
        "TK303",
        "spec.template.spec.restartPolicy",
    ),
    ("pod-dns-policy-typo", "TK201", "spec.dnsPolicy"),
    (
        "pod-node-selector-value",
        "TK402",
        "spec.template.spec.nodeSelector[\"nvidia.com/gpu.product\"]",
    ),
    (
        "pod-subdomain-dots",
        "TK401",
        "spec.template.spec.subdomain",
    ),
    ("pod-hostname-invalid", "TK401", "spec.hostname"),
    (
        "toleration-empty-key-equal",
        "TK410",
        "spec.template.spec.tolerations[1].operator",
    ),
    (
        "toleration-exists-with-value",
        "TK410",
        "spec.template.spec.tolerations[0].value",
    ),
    (
        "toleration-seconds-without-no-execute",
        "TK410",
        "spec.template.spec.tolerations[1].effect",
    ),
    (
        "toleration-effect-typo",
        "TK410",
        "spec.template.spec.tolerations[0].effect",
    ),
    ("job-parallelism-negative", "TK413", "spec.parallelism"),
    ("job-completions-negative", "TK413", "spec.completions"),
    ("job-backoff-limit-negative", "TK413", "spec.backoffLimit"),
    (
        "job-active-deadline-negative",
        "TK413",
        "spec.activeDeadlineSeconds",
    ),
    ("job-ttl-negative", "TK413", "spec.ttlSecondsAfterFinished"),
    (
        "job-completion-mode-lowercase",
        "TK413",
        "spec.completionMode",
    ),
    (
        "job-indexed-without-completions",
        "TK413",
        "spec.completionMode",
    ),
    (
        "job-indexed-parallelism-too-high",
        "TK413",
        "spec.parallelism",
    ),
    (
        "job-pod-failure-policy-on-failure",
        "TK413",
        "spec.template.spec.restartPolicy",
    ),
    (
        "job-backoff-limit-per-index-non-indexed",
        "TK413",
        "spec.backoffLimitPerIndex",
    ),
    (
        "job-max-failed-indexes-alone",
        "TK413",
        "spec.maxFailedIndexes",
    ),
    ("job-name-too-long-for-label", "TK311", "metadata.name"),
    (
        "env-value-and-value-from",
        "TK417",
        "spec.template.spec.containers[0].env[0].valueFrom",
    ),
    (
        "env-value-from-empty",
        "TK417",
        "spec.template.spec.containers[0].env[0].valueFrom",
    ),
    (
        "env-resource-field-gpu",
        "TK417",
        "spec.template.spec.containers[0].env[0].valueFrom.resourceFieldRef.resource",
    ),
    (
        "resources-name-not-standard",
        "TK408",
        "spec.template.spec.containers[0].resources.limits.gpu",
    ),
    (
        "spread-max-skew-zero",
        "TK418",
        "spec.template.spec.topologySpreadConstraints[0].maxSkew",
    ),
    (
        "spread-when-unsatisfiable",
        "TK418",
        "spec.template.spec.topologySpreadConstraints[0].whenUnsatisfiable",
    ),
    (
        "spread-min-domains-schedule-anyway",
        "TK418",
        "spec.template.spec.topologySpreadConstraints[0].minDomains",
    ),
    (
        "spread-topology-key-empty",
        "TK418",
        "spec.template.spec.topologySpreadConstraints[0]",
    ),
    (
        "spread-duplicate",
        "TK418",
        "spec.template.spec.topologySpreadConstraints[0]",
    ),
    ("job-selector-not-generated", "TK413", "spec.selector"),
    (
        "deployment-restart-policy-never",
        "TK419",
        "spec.template.spec.restartPolicy",
    ),
    (
        "deployment-selector-mismatch",
        "TK419",
        "spec.template.metadata.labels",
    ),
    (
        "init-container-probe",
        "TK420",
        "spec.template.spec.initContainers[0].readinessProbe",
    ),
    (
        "probe-liveness-success-threshold",
        "TK420",
        "spec.template.spec.containers[0].livenessProbe.successThreshold",
    ),
    (
        "probe-no-handler",
        "TK420",
        "spec.template.spec.containers[0].readinessProbe",
    ),
    (
        "probe-two-handlers",
        "TK420",
        "spec.template.spec.containers[0].livenessProbe.tcpSocket",
    ),
    (
        "probe-http-port-zero",
        "TK420",
        "spec.template.spec.containers[0].startupProbe.httpGet.port",
    ),
    (
        "probe-negative-period",
        "TK420",
        "spec.template.spec.containers[0].livenessProbe.periodSeconds",
    ),
    (
        "probe-readiness-grace-period",
        "TK420",
        "spec.template.spec.containers[0].readinessProbe.terminationGracePeriodSeconds",
    ),
    (
        "lifecycle-exec-no-command",
        "TK420",
        "spec.template.spec.containers[0].lifecycle.preStop.exec",
    ),
    (
        "container-restart-policy-regular",
        "TK421",
        "spec.template.spec.containers[0].restartPolicy",
    ),
    (
        "init-container-restart-policy",
        "TK421",
        "spec.initContainers[0].restartPolicy",
    ),
    ("containers-empty", "TK421", "spec.template.spec.containers"),
    (
        "pod-dns-too-many-nameservers",
        "TK421",
        "spec.dnsConfig.nameservers",
    ),
    (
        "pod-dns-nameserver-not-ip",
        "TK421",
        "spec.dnsConfig.nameservers[0]",
    ),
    ("pod-host-alias-ip", "TK421", "spec.hostAliases[0].ip"),
    (
        "pod-host-alias-hostname",
        "TK421",
        "spec.hostAliases[0].hostnames[0]",
    ),
    (
        "pod-service-account-name",
        "TK421",
        "spec.template.spec.serviceAccountName",
    ),
    (
        "pod-runtime-class-name",
        "TK421",
        "spec.template.spec.runtimeClassName",
    ),
    (
        "pod-priority-class-name",
        "TK421",
        "spec.template.spec.priorityClassName",
    ),
    (
        "pod-active-deadline-zero",
        "TK421",
        "spec.template.spec.activeDeadlineSeconds",
    ),
    (
        "job-pod-failure-policy-exit-code-zero",
        "TK413",
        "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
    ),
    (
        "job-pod-failure-policy-action",
        "TK413",
        "spec.podFailurePolicy.rules[0].action",
    ),
    (
        "job-pod-failure-policy-both-requirements",
        "TK413",
        "spec.podFailurePolicy.rules[0]",
    ),
    (
        "job-pod-failure-policy-container-name",
        "TK413",
        "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
    ),
    ("pod-dns-none-without-config", "TK421", "spec.dnsPolicy"),
    (
        "security-share-process-namespace-host-pid",
        "TK421",
        "spec.template.spec.shareProcessNamespace",
    ),
    (
        "volume-secret-default-mode-decimal",
        "TK409",
        "spec.template.spec.volumes[0].secret.defaultMode",
    ),
    (
        "volume-configmap-item-absolute-path",
        "TK409",
        "spec.template.spec.volumes[0].configMap.items[0].path",
    ),
    (
        "volume-host-path-backsteps",
        "TK409",
        "spec.template.spec.volumes[0].hostPath.path",
    ),
    (
        "volume-nfs-relative-path",
        "TK409",
        "spec.template.spec.volumes[0].nfs.path",
    ),
    (
        "volume-empty-dir-negative-size",
        "TK409",
        "spec.template.spec.volumes[0].emptyDir.sizeLimit",
    ),
    (
        "mount-sub-path-and-expr",
        "TK409",
        "spec.template.spec.containers[0].volumeMounts[0].subPathExpr",
    ),
    (
        "security-run-as-user-negative",
        "TK423",
        "spec.template.spec.containers[0].securityContext.runAsUser",
    ),
    (
        "security-privileged-no-escalation",
        "TK423",
        "spec.template.spec.containers[0].securityContext.privileged",
    ),
    (
        "security-sys-admin-no-escalation",
        "TK423",
        "spec.template.spec.containers[0].securityContext.capabilities.add[0]",
    ),
    (
        "security-seccomp-localhost-no-profile",
        "TK423",
        "spec.template.spec.securityContext.seccompProfile",
    ),
    (
        "security-sysctl-name",
        "TK423",
        "spec.template.spec.securityContext.sysctls[0].name",
    ),
    (
        "affinity-in-without-values",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
    ),
    (
        "affinity-no-terms",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    ),
    (
        "affinity-operator-lowercase",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    (
        "affinity-exists-with-values",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
    ),
    (
        "affinity-preferred-weight-zero",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
    ),
    (
        "affinity-pod-anti-topology-key-empty",
        "TK422",
        "spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
    ),
    (
        "port-host-network-mismatch",
        "TK406",
        "spec.containers[0].ports[0].hostPort",
    ),
    (
        "env-field-ref-unsupported",
        "TK417",
        "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
    ),
    (
        "env-from-no-source",
        "TK417",
        "spec.template.spec.containers[0].envFrom",
    ),
    (
        "resources-hugepages-alone",
        "TK408",
        "spec.template.spec.containers[0].resources",
    ),
    (
        "pod-scheduling-gate-name",
        "TK421",
        "spec.schedulingGates[0]",
    ),
    (
        "affinity-required-value-not-label",
        "TK422",
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]",
    ),
];

/// Cases lint misses: (file stem, the field the server names, in lint's path syntax).
const MISSED: &[(&str, &str)] = &[];

/// The `.yaml` files of a folder, by stem, sorted.
fn stems(dir: &str) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(Path::new(ROOT).join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| path.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect();
    stems.sort();
    stems
}

/// The `# kube-version: X.Y` header of a fixture, for rules that depend on the version.
fn kube_version(file: &str) -> Option<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
    text.lines()
        .take_while(|line| line.starts_with('#'))
        .find_map(|line| line.strip_prefix("# kube-version:"))
        .map(|version| version.trim().to_owned())
}

/// The error findings of `lint --format json` on one file, as (code, path, message).
fn errors(file: &str) -> Vec<(String, String, String)> {
    let mut command = common::tao();
    command
        .current_dir(ROOT)
        .args(["--color=never", "lint", "--format", "json"]);
    if let Some(version) = kube_version(file) {
        command.args(["--kube-version", &version]);
    }
    let out = command.arg(file).output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{file}: lint failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let document: Json = serde_json::from_slice(&out.stdout).unwrap();
    document["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["severity"] == "error")
        .map(|finding| {
            let text = |key: &str| finding[key].as_str().unwrap_or_default().to_owned();
            (text("code"), text("path"), text("message"))
        })
        .collect()
}

/// Whether a finding at `found` is about the field at `field`: the field itself, something
/// inside it, or the item that holds it (`…containers[0]` for `…containers[0].image`).
fn about(found: &str, field: &str) -> bool {
    let inside = |outer: &str, inner: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
    };
    let holder = match field.rfind('.') {
        Some(dot) if field[dot + 1..].chars().all(|c| c.is_ascii_alphanumeric()) => &field[..dot],
        _ => field,
    };
    found == field || inside(field, found) || found == holder
}

#[test]
fn every_fixture_is_listed_once() {
    let listed: Vec<&str> = COVERED
        .iter()
        .map(|(file, _, _)| *file)
        .chain(MISSED.iter().map(|(file, _)| *file))
        .collect();
    let unique: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(unique.len(), listed.len(), "a case is listed twice");
    let on_disk = stems(DIR);
    let on_disk: BTreeSet<&str> = on_disk.iter().map(String::as_str).collect();
    assert_eq!(
        on_disk.difference(&unique).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "fixtures listed in neither COVERED nor MISSED"
    );
    assert_eq!(
        unique.difference(&on_disk).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "listed cases without a fixture"
    );
}

#[test]
fn covered_cases_are_reported_where_the_server_refuses() {
    let mut failures = Vec::new();
    for (stem, code, path) in COVERED {
        let file = format!("{DIR}/{stem}.yaml");
        let found = errors(&file);
        if !found.iter().any(|(c, p, _)| c == code && p == path) {
            failures.push(format!(
                "{file}: no {code} error at `{path}`; found {found:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn missed_cases_are_still_missed() {
    let mut caught = Vec::new();
    for (stem, field) in MISSED {
        let file = format!("{DIR}/{stem}.yaml");
        let found: Vec<_> = errors(&file)
            .into_iter()
            .filter(|(_, path, _)| about(path, field))
            .collect();
        if !found.is_empty() {
            caught.push(format!(
                "{file}: now reported ({found:?}): move it to COVERED and update {DIR}/README.md"
            ));
        }
    }
    assert!(caught.is_empty(), "{}", caught.join("\n"));
}

#[test]
fn near_misses_the_server_accepts_are_clean() {
    let dir = format!("{DIR}/pass");
    let stems = stems(&dir);
    assert!(!stems.is_empty());
    let mut failures = Vec::new();
    for stem in &stems {
        let file = format!("{dir}/{stem}.yaml");
        let found = errors(&file);
        if !found.is_empty() {
            failures.push(format!("{file}: {found:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "false positives:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_path_relation_is_the_one_the_table_uses() {
    let field = "spec.template.spec.containers[0].image";
    assert!(about(field, field));
    assert!(about("spec.template.spec.containers[0]", field));
    assert!(about("spec.template.spec.containers[0].image.x", field));
    assert!(!about(
        "spec.template.spec.containers[0].imagePullPolicy",
        field
    ));
    assert!(!about("spec.template.spec", field));
    assert!(about(
        "spec.template.spec.nodeSelector[\"nvidia.com/gpu.product\"]",
        "spec.template.spec.nodeSelector"
    ));
}
