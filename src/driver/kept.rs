//! What the API server kept of what the driver sent: the server's dry-run answer compared with
//! the manifest, so that a field a server drops silently (one behind a feature gate that is
//! off) refuses the submit instead of vanishing.

/// The fields of `sent` objects that the API server's answer (`kubectl apply --dry-run=server
/// -o json`: one object or a List) does not have: fields a server drops silently, such as those
/// behind a feature gate that is off. Each as `Kind/name: path`.
pub fn dropped_fields(sent: &[serde_json::Value], answer: &serde_json::Value) -> Vec<String> {
    let items: Vec<&serde_json::Value> = match answer.get("items").and_then(|i| i.as_array()) {
        Some(items) if answer.get("kind").and_then(|k| k.as_str()) == Some("List") => {
            items.iter().collect()
        }
        _ => vec![answer],
    };
    let key =
        |o: &serde_json::Value| (o.get("kind").cloned(), o.pointer("/metadata/name").cloned());
    let mut dropped = Vec::new();
    for object in sent {
        let label = format!(
            "{}/{}",
            object.get("kind").and_then(|k| k.as_str()).unwrap_or("?"),
            object
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("?")
        );
        match items.iter().find(|i| key(i) == key(object)) {
            None => dropped.push(format!("{label}: the whole object")),
            Some(kept) => missing(object, kept, &mut String::new(), &label, &mut dropped),
        }
    }
    dropped
}

fn missing(
    sent: &serde_json::Value,
    kept: &serde_json::Value,
    path: &mut String,
    label: &str,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (sent, kept) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                match b.get(k) {
                    None => out.push(format!("{label}: {}", &path[1..])),
                    Some(w) => missing(v, w, path, label, out),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, v) in a.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match b.get(i) {
                    None => out.push(format!("{label}: {}", &path[1..])),
                    Some(w) => missing(v, w, path, label, out),
                }
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod dropped_tests {
    use serde_json::json;

    #[test]
    fn fields_the_server_did_not_keep_are_named() {
        let sent = vec![
            json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"successPolicy": {"rules": []}, "template": {"spec": {"containers": [{"name": "a", "x": 1}]}}}}),
        ];
        let answer = json!({"kind": "List", "items": [{"kind": "Job", "metadata": {"name": "j", "uid": "u"}, "spec": {"template": {"spec": {"containers": [{"name": "a"}]}}}}]});
        assert_eq!(
            super::dropped_fields(&sent, &answer),
            [
                "Job/j: spec.successPolicy",
                "Job/j: spec.template.spec.containers[0].x"
            ]
        );
        let kept = json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"successPolicy": {"rules": []}, "template": {"spec": {"containers": [{"name": "a", "x": 1}]}}}});
        assert!(super::dropped_fields(&sent, &kept).is_empty());
    }
}
