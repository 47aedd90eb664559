//! Kubernetes' CEL libraries through the `lint` command: the rules of a CRD
//! (`fixtures/cel-libraries/crd.yaml`) and the validations of ValidatingAdmissionPolicies
//! call them, and each object that fails one is reported with the API server's words: the
//! rule's message when its value fails it, the library's error when a function refuses it.

mod common;

use common::ROOT;
use serde_json::Value as Json;

const DIR: &str = "fixtures/cel-libraries";

/// `lint --format json` in the fixtures' folder: its findings.
fn findings(args: &[&str]) -> Vec<Json> {
    let out = common::tao()
        .current_dir(format!("{ROOT}/{DIR}"))
        .args(["--color=never", "lint", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    let document: Json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    document["findings"].as_array().unwrap().clone()
}

/// The findings of a run as `(line, message)`.
fn lint(args: &[&str]) -> Vec<(u64, String)> {
    findings(args)
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The findings of the CRD's rules on `endpoints.yaml`.
fn endpoints() -> Vec<(u64, String)> {
    lint(&[
        "--select",
        "strict-schema",
        "--crd",
        "crd.yaml",
        "endpoints.yaml",
    ])
}

/// Whether one finding is on `line` and says `says`.
fn said(found: &[(u64, String)], line: u64, says: &str) -> bool {
    found.iter().any(|(l, m)| *l == line && m.contains(says))
}

#[test]
fn url_rules_fail_with_the_api_server_s_words() {
    let found = endpoints();
    for (line, says) in [
        (
            41,
            "spec.callback: Invalid value: \"string\": the callback must be an https URL on the \
             default port",
        ),
        (
            47,
            "spec.callback: Invalid value: \"string\": URL parse error during conversion from \
             string: parse \"hooks/notify\": invalid URI for request evaluating rule: the \
             callback must be an https URL on the default port",
        ),
    ] {
        assert!(said(&found, line, says), "line {line}: {says}\n{found:#?}");
    }
}

#[test]
fn semver_rules_fail_with_the_api_server_s_words() {
    let found = endpoints();
    for (line, says) in [
        (
            53,
            "spec.minVersion: Invalid value: \"string\": the version must be after 1.27",
        ),
        (
            59,
            "spec.minVersion: Invalid value: \"string\": Invalid character(s) found in minor \
             number \"30-rc\" evaluating rule: the version must be after 1.27",
        ),
    ] {
        assert!(said(&found, line, says), "line {line}: {says}\n{found:#?}");
    }
}

#[test]
fn format_rules_fail_with_apimachinery_s_words() {
    let found = endpoints();
    let says = "spec.team: Invalid value: \"string\": team: a lowercase RFC 1123 label must \
                consist of lower case alphanumeric characters or '-', and must start and end with \
                an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    assert!(said(&found, 65, says), "{says}\n{found:#?}");
}

#[test]
fn ip_and_cidr_rules_fail_with_the_api_server_s_words() {
    let found = endpoints();
    for (line, says) in [
        (
            17,
            "spec.address: Invalid value: \"string\": the address must be a global unicast address",
        ),
        (
            23,
            "spec.address: Invalid value: \"string\": IP Address \"10.0.1\" parse error during \
             conversion from string: ParseAddr(\"10.0.1\"): IPv4 address too short evaluating \
             rule: the address must be a global unicast address",
        ),
        (
            29,
            "spec.network: Invalid value: \"string\": the network must be a masked prefix of 16 \
             bits or more",
        ),
        (
            35,
            "spec.network: Invalid value: \"string\": network address parse error during \
             conversion from string: network address parse error during conversion from string: \
             netip.ParsePrefix(\"10.0.0.0/\"): bad bits after slash: \"\" evaluating rule",
        ),
    ] {
        assert!(said(&found, line, says), "line {line}: {says}\n{found:#?}");
    }
    // One finding on each object that fails, none on the one that passes.
    assert!(found.iter().all(|(line, _)| *line > 11), "{found:#?}");
}

/// `policies.yaml`: its findings, `(line, severity, message)`.
fn policies() -> Vec<(u64, String, String)> {
    findings(&["--select", "admission-policy", "policies.yaml"])
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap(),
                f["severity"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The libraries in a policy's validations and variables (an `ip` value kept in a variable),
/// and a validation that needs the authorizer: said once, as a note, on the first object.
#[test]
fn admission_policies_call_the_libraries_and_say_what_needs_the_authorizer() {
    let found = policies();
    let denied = "ValidatingAdmissionPolicy 'mirror.example.com' with binding 'mirror-binding' \
                  denied request: ";
    let expected = [
        (
            32,
            "note",
            "ValidatingAdmissionPolicy 'mirror.example.com': spec.validations[2] is not \
             evaluated: its expression needs the cluster's authorizer, which is not here offline"
                .to_string(),
        ),
        (
            39,
            "error",
            format!("{denied}the mirror must be served over https"),
        ),
        (
            46,
            "error",
            format!(
                "{denied}expression 'url(object.data.mirror).getScheme() == 'https'' resulted in \
                 error: URL parse error during conversion from string: parse \
                 \"mirror.example.com/pypi\": invalid URI for request"
            ),
        ),
        (
            53,
            "error",
            format!("{denied}the address must be in the cluster's network"),
        ),
        (
            85,
            "note",
            "ValidatingAdmissionPolicy 'service-ports.example.com': spec.matchConditions[0] \
             needs the cluster's authorizer, which is not here offline: the policy is not \
             evaluated"
                .to_string(),
        ),
    ];
    let found: Vec<(u64, &str, &str)> = found
        .iter()
        .map(|(l, s, m)| (*l, s.as_str(), m.as_str()))
        .collect();
    let expected: Vec<(u64, &str, &str)> = expected
        .iter()
        .map(|(l, s, m)| (*l, *s, m.as_str()))
        .collect();
    assert_eq!(found, expected);
}
