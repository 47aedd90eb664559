use crate::kube::KubeVersion;
use crate::kube::pod_security::Level;
use crate::lint::api::{Report, index, items, key, text};
use crate::lint::pods::container_name;
use crate::lint::{Document, Findings, Rule};
use crate::yaml::{Node, Step, Value};

crate::rule! {
    /// What it checks: pods and pod templates against the Pod Security Standards level their
    /// namespace enforces, as the Pod Security admission controller checks them: a Namespace
    /// in the same file with the `pod-security.kubernetes.io/enforce` label (and
    /// `enforce-version`), else `lint --pod-security LEVEL[:VERSION]`; nothing without
    /// either. Baseline: host namespaces, `privileged`, capabilities beyond the default set,
    /// `hostPath` volumes, `hostPort`s, AppArmor, SELinux options, `procMount`, an
    /// `Unconfined` seccomp profile, sysctls outside the safe set (by version), Windows
    /// `hostProcess`, from 1.31 `gitRepo` volumes, from 1.34 a `host` in probes and
    /// lifecycle handlers.
    /// Restricted adds: volume types, `allowPrivilegeEscalation: false`, `runAsNonRoot:
    /// true`, no `runAsUser: 0`, a `RuntimeDefault` or `Localhost` seccomp profile,
    /// `capabilities.drop: [ALL]` with only `NET_BIND_SERVICE` added (Windows pods are exempt
    /// from the last three). Each finding names the level and version, in the admission
    /// controller's words.
    ///
    /// Why it matters: the admission controller refuses the pod; for a Job or Deployment the
    /// object is accepted and its pods are refused, so nothing ever runs and the reason is
    /// only in the controller's events.
    ///
    /// Example: a Job in a namespace labelled `pod-security.kubernetes.io/enforce:
    /// restricted` whose container sets no `securityContext`.
    ///
    /// Fix: set the fields each finding names (for restricted: `allowPrivilegeEscalation:
    /// false`, `runAsNonRoot: true`, `seccompProfile: {type: RuntimeDefault}`,
    /// `capabilities: {drop: [ALL]}`), or run the workload in a namespace of the level it
    /// needs.
    pub struct PodSecurityStandards {
        code: "TK415",
        name: "pod-security",
        group: Api,
        severity: Error,
    }
}

/// The capabilities baseline lets a container add (the container runtime's default set).
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The volume types restricted allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The sysctls baseline allows at a version.
fn safe_sysctl(name: &str, version: KubeVersion) -> bool {
    let since = |minor| version.minor >= minor;
    match name {
        "kernel.shm_rmid_forced"
        | "net.ipv4.ip_local_port_range"
        | "net.ipv4.ip_unprivileged_port_start"
        | "net.ipv4.tcp_syncookies"
        | "net.ipv4.ping_group_range" => true,
        "net.ipv4.ip_local_reserved_ports" => since(27),
        "net.ipv4.tcp_keepalive_time"
        | "net.ipv4.tcp_fin_timeout"
        | "net.ipv4.tcp_keepalive_intvl"
        | "net.ipv4.tcp_keepalive_probes" => since(29),
        "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" => since(32),
        "net.ipv4.tcp_slow_start_after_idle" | "net.ipv4.tcp_notsent_lowat" => since(37),
        _ => false,
    }
}

fn flag(node: Option<&Node>, key: &str) -> Option<bool> {
    match node?.get(key)?.value {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

fn nested<'a>(node: Option<&'a Node>, path: &[&str]) -> Option<&'a Node> {
    path.iter().try_fold(node?, |n, k| n.get(k))
}

impl Rule for PodSecurityStandards {
    fn check(&self, doc: &Document, out: &mut Findings) {
        let Some(level) = doc.pod_security else {
            return;
        };
        let Some((pod, spec)) = doc.pod_spec() else {
            return;
        };
        let version = level.version.unwrap_or(doc.kube_version);
        // Admission refuses a pod; a controller's object is accepted and its pods refused.
        let refused = if doc.kind == "Pod" {
            ""
        } else {
            "; the object is accepted, the pods it creates are refused"
        };
        let mut report = Report::new(doc, out);
        let mut say = |path: Vec<Step>, node: &Node, reason: &str, detail: String, fix: &str| {
            report.at(
                path,
                node,
                format!("violates PodSecurity \"{level}\": {reason} ({detail}){refused}"),
                fix,
            );
        };
        let pod_sc = spec.get("securityContext");
        let pod_sc_path = || key(pod, "securityContext");
        let containers = doc.containers();
        fn sc_of(c: &Node) -> Option<&Node> {
            c.get("securityContext")
        }
        let restricted = level.level == Level::Restricted;
        let windows = text_at(spec, &["os", "name"]) == Some("windows");

        // Baseline.
        for field in ["hostNetwork", "hostPID", "hostIPC"] {
            if flag(Some(spec), field) == Some(true) {
                say(
                    key(pod, field),
                    spec.get(field).unwrap_or(spec),
                    "host namespaces",
                    format!("{field}=true"),
                    "leave the pod in its own namespaces",
                );
            }
        }
        if flag(nested(pod_sc, &["windowsOptions"]), "hostProcess") == Some(true) {
            say(
                pod_sc_path(),
                pod_sc.unwrap_or(spec),
                "hostProcess",
                "pod must not set securityContext.windowsOptions.hostProcess=true".into(),
                "",
            );
        }
        for (path, c) in containers {
            let name = container_name(c);
            let sc = sc_of(c);
            let sc_path = || key(&path.get(), "securityContext");
            let at = sc.unwrap_or(c);
            if flag(nested(sc, &["windowsOptions"]), "hostProcess") == Some(true) {
                say(
                    sc_path(),
                    at,
                    "hostProcess",
                    format!(
                        "container \"{name}\" must not set securityContext.windowsOptions.hostProcess=true"
                    ),
                    "",
                );
            }
            if flag(sc, "privileged") == Some(true) {
                say(
                    key(&sc_path(), "privileged"),
                    field(sc, at, &["privileged"]),
                    "privileged",
                    format!("container \"{name}\" must not set securityContext.privileged=true"),
                    "drop `privileged: true`",
                );
            }
            let added = nested(sc, &["capabilities", "add"])
                .map(items)
                .unwrap_or_default();
            for (cap_node, cap) in added.iter().filter_map(|n| Some((n, text(n)?))) {
                let allowed = if restricted {
                    cap == "NET_BIND_SERVICE"
                } else {
                    BASELINE_CAPABILITIES.contains(&cap)
                };
                if !allowed {
                    let reason = if restricted {
                        "unrestricted capabilities"
                    } else {
                        "non-default capabilities"
                    };
                    say(
                        sc_path(),
                        cap_node,
                        reason,
                        format!(
                            "container \"{name}\" must not include \"{cap}\" in securityContext.capabilities.add"
                        ),
                        "add only the capabilities the level allows",
                    );
                }
            }
            for (i, port) in c
                .get("ports")
                .map(items)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Some(node) = port.get("hostPort")
                    && !matches!(node.value, Value::Int(0))
                {
                    let port_text = crate::lint::pods::scalar_text(node);
                    say(
                        key(&index(&key(&path.get(), "ports"), i), "hostPort"),
                        node,
                        "hostPort",
                        format!("container \"{name}\" uses hostPort {port_text}"),
                        "reach the pod through a Service instead of a host port",
                    );
                }
            }
            // Probes and lifecycle handlers may not reach another host (from 1.34).
            if version.minor >= 34 {
                for handler in [
                    &["livenessProbe"][..],
                    &["readinessProbe"],
                    &["startupProbe"],
                    &["lifecycle", "postStart"],
                    &["lifecycle", "preStop"],
                ] {
                    for action in ["httpGet", "tcpSocket"] {
                        let mut field: Vec<&str> = handler.to_vec();
                        field.extend([action, "host"]);
                        if let Some(host) = nested(Some(c), &field)
                            && text(host).is_some_and(|h| !h.is_empty())
                        {
                            let mut at = path.get();
                            at.extend(field.iter().map(|k| Step::Key((*k).into())));
                            let shown = text(host).unwrap_or_default();
                            say(
                                at,
                                host,
                                "probe or lifecycle host",
                                format!(
                                    "container \"{name}\" uses probe or lifecycle host \"{shown}\""
                                ),
                                "leave `host` unset: the kubelet probes the pod's own IP",
                            );
                        }
                    }
                }
            }
            if let Some(mount) = text_at_opt(sc, &["procMount"])
                && mount != "Default"
            {
                say(
                    key(&sc_path(), "procMount"),
                    field(sc, at, &["procMount"]),
                    "procMount",
                    format!(
                        "container \"{name}\" must not set securityContext.procMount to \"{mount}\""
                    ),
                    "",
                );
            }
            selinux_options(sc, &format!("container \"{name}\""), &mut |detail| {
                say(sc_path(), at, "seLinuxOptions", detail, "")
            });
            if text_at_opt(sc, &["appArmorProfile", "type"]) == Some("Unconfined") {
                say(
                    sc_path(),
                    field(sc, at, &["appArmorProfile", "type"]),
                    "forbidden AppArmor profile",
                    format!(
                        "container \"{name}\" must not set securityContext.appArmorProfile.type to \"Unconfined\""
                    ),
                    "",
                );
            }
            if !restricted && text_at_opt(sc, &["seccompProfile", "type"]) == Some("Unconfined") {
                say(
                    sc_path(),
                    field(sc, at, &["seccompProfile", "type"]),
                    "seccompProfile",
                    format!(
                        "container \"{name}\" must not set securityContext.seccompProfile.type to \"Unconfined\""
                    ),
                    "",
                );
            }
        }
        selinux_options(pod_sc, "pod", &mut |detail| {
            say(
                pod_sc_path(),
                pod_sc.unwrap_or(spec),
                "seLinuxOptions",
                detail,
                "",
            )
        });
        if text_at_opt(pod_sc, &["appArmorProfile", "type"]) == Some("Unconfined") {
            say(
                pod_sc_path(),
                pod_sc.unwrap_or(spec),
                "forbidden AppArmor profile",
                "pod must not set securityContext.appArmorProfile.type to \"Unconfined\"".into(),
                "",
            );
        }
        if !restricted && text_at_opt(pod_sc, &["seccompProfile", "type"]) == Some("Unconfined") {
            say(
                pod_sc_path(),
                field(pod_sc, spec, &["seccompProfile", "type"]),
                "seccompProfile",
                "pod must not set securityContext.seccompProfile.type to \"Unconfined\"".into(),
                "",
            );
        }
        // The pod template's AppArmor annotations (before the field, still read).
        let mut meta_path = pod[..pod.len() - 1].to_vec();
        meta_path.push(Step::Key("metadata".into()));
        let template_meta = doc.root.lookup(&meta_path).map(|(_, n)| n);
        for (k, v) in nested(template_meta, &["annotations"])
            .map(crate::lint::api::entries)
            .unwrap_or_default()
        {
            let (Some(k), Some(value)) = (text(k), text(v)) else {
                continue;
            };
            if k.starts_with("container.apparmor.security.beta.kubernetes.io/")
                && !(value.is_empty()
                    || value == "runtime/default"
                    || value.starts_with("localhost/"))
            {
                let at = key(&key(&meta_path, "annotations"), k);
                say(
                    at,
                    v,
                    "forbidden AppArmor profile",
                    format!("{k}=\"{value}\""),
                    "",
                );
            }
        }
        for (i, s) in nested(pod_sc, &["sysctls"])
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if let Some(name) = s.get("name").and_then(text)
                && !safe_sysctl(name, version)
            {
                say(
                    index(&key(&pod_sc_path(), "sysctls"), i),
                    s,
                    "forbidden sysctls",
                    name.to_string(),
                    "set only the safe sysctls",
                );
            }
        }
        for (i, volume) in spec
            .get("volumes")
            .map(items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let vname = volume.get("name").and_then(text).unwrap_or("<unnamed>");
            let at = index(&key(pod, "volumes"), i);
            // gitRepo runs git on the node as root (from 1.31; restricted refuses it anyway).
            if !restricted && version.minor >= 31 && volume.get("gitRepo").is_some() {
                say(
                    at.clone(),
                    volume,
                    "gitRepo volumes",
                    format!("volume \"{vname}\""),
                    "clone the repository in an init container into an emptyDir",
                );
            }
            if volume.get("hostPath").is_some() {
                say(
                    at.clone(),
                    volume,
                    "hostPath volumes",
                    format!("volume \"{vname}\""),
                    "use a PersistentVolumeClaim or an emptyDir",
                );
                continue;
            }
            if restricted {
                let kind = crate::lint::api::entries(volume)
                    .iter()
                    .filter_map(|(k, _)| text(k))
                    .find(|k| *k != "name");
                if let Some(kind) = kind.filter(|k| !RESTRICTED_VOLUMES.contains(k)) {
                    say(
                        at,
                        volume,
                        "restricted volume types",
                        format!("volume \"{vname}\" uses restricted volume type \"{kind}\""),
                        "use a PersistentVolumeClaim, a CSI volume, an emptyDir or a projected volume",
                    );
                }
            }
        }
        if !restricted {
            return;
        }

        // Restricted.
        if pod_sc
            .and_then(|s| s.get("runAsUser"))
            .is_some_and(|n| matches!(n.value, Value::Int(0)))
        {
            say(
                key(&pod_sc_path(), "runAsUser"),
                field(pod_sc, spec, &["runAsUser"]),
                "runAsUser=0",
                "pod must not set runAsUser=0".into(),
                "run as a non-zero user",
            );
        }
        let pod_non_root = flag(pod_sc, "runAsNonRoot");
        let pod_seccomp = text_at_opt(pod_sc, &["seccompProfile", "type"]);
        for (path, c) in containers {
            let name = container_name(c);
            let sc = sc_of(c);
            let sc_path = || key(&path.get(), "securityContext");
            let at = sc.unwrap_or(c);
            if sc
                .and_then(|s| s.get("runAsUser"))
                .is_some_and(|n| matches!(n.value, Value::Int(0)))
            {
                say(
                    key(&sc_path(), "runAsUser"),
                    field(sc, at, &["runAsUser"]),
                    "runAsUser=0",
                    format!("container \"{name}\" must not set runAsUser=0"),
                    "run as a non-zero user",
                );
            }
            match (flag(sc, "runAsNonRoot"), pod_non_root) {
                (Some(false), _) => say(
                    key(&sc_path(), "runAsNonRoot"),
                    field(sc, at, &["runAsNonRoot"]),
                    "runAsNonRoot != true",
                    format!("container \"{name}\" must not set securityContext.runAsNonRoot=false"),
                    "set `runAsNonRoot: true`",
                ),
                (None, None | Some(false)) => say(
                    sc_path(),
                    at,
                    "runAsNonRoot != true",
                    format!(
                        "pod or container \"{name}\" must set securityContext.runAsNonRoot=true"
                    ),
                    "set `runAsNonRoot: true` in the pod's or the container's securityContext",
                ),
                _ => {}
            }
            if windows {
                continue;
            }
            if flag(sc, "allowPrivilegeEscalation") != Some(false) {
                say(
                    sc_path(),
                    field(sc, at, &["allowPrivilegeEscalation"]),
                    "allowPrivilegeEscalation != false",
                    format!(
                        "container \"{name}\" must set securityContext.allowPrivilegeEscalation=false"
                    ),
                    "set `allowPrivilegeEscalation: false`",
                );
            }
            let seccomp = text_at_opt(sc, &["seccompProfile", "type"]).or(pod_seccomp);
            if !matches!(seccomp, Some("RuntimeDefault" | "Localhost")) {
                say(
                    sc_path(),
                    at,
                    "seccompProfile",
                    format!(
                        "pod or container \"{name}\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\""
                    ),
                    "set `seccompProfile: {type: RuntimeDefault}`",
                );
            }
            let drops = nested(sc, &["capabilities", "drop"])
                .map(items)
                .unwrap_or_default();
            if !drops.iter().filter_map(text).any(|d| d == "ALL") {
                say(
                    sc_path(),
                    at,
                    "unrestricted capabilities",
                    format!(
                        "container \"{name}\" must set securityContext.capabilities.drop=[\"ALL\"]"
                    ),
                    "set `capabilities: {drop: [ALL]}`",
                );
            }
        }
    }
}

/// SELinux options baseline forbids in a security context: a type outside the container
/// types, any user or role. `who` is `pod` or `container "x"`.
fn selinux_options(sc: Option<&Node>, who: &str, say: &mut dyn FnMut(String)) {
    let options = nested(sc, &["seLinuxOptions"]);
    if let Some(t) = text_at_opt(options, &["type"])
        && !matches!(
            t,
            "" | "container_t" | "container_init_t" | "container_kvm_t" | "container_engine_t"
        )
    {
        say(format!(
            "{who} set forbidden securityContext.seLinuxOptions: type \"{t}\""
        ));
    }
    for field in ["user", "role"] {
        if let Some(v) = text_at_opt(options, &[field]).filter(|v| !v.is_empty()) {
            say(format!(
                "{who} set forbidden securityContext.seLinuxOptions: {field} \"{v}\""
            ));
        }
    }
}

/// The node at `path` under a security context, or `fallback` where it is not written.
fn field<'a>(sc: Option<&'a Node>, fallback: &'a Node, path: &[&str]) -> &'a Node {
    nested(sc, path).unwrap_or(fallback)
}

fn text_at<'a>(node: &'a Node, path: &[&str]) -> Option<&'a str> {
    text_at_opt(Some(node), path)
}

fn text_at_opt<'a>(node: Option<&'a Node>, path: &[&str]) -> Option<&'a str> {
    nested(node, path).and_then(text)
}
