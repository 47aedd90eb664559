//! The staging map as a property: for random mounts (with aliases) and random producer paths,
//! a rewritten path lies under exactly the mount whose alias was the longest whole-segment
//! prefix, an uncovered path is left alone, and the map round-trips through JSON.

use proptest::prelude::*;
use serde_json::json;
use tao_k8s::plan::Options;
use tao_k8s::render::Templates;
use tao_k8s::source::Source;
use tao_k8s::staging::{Rewrite, StagingMap};

/// Short segments from a tiny alphabet, so that prefixes and near-misses (`a` vs `ab`) collide often.
fn segments() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "ab", "b", "data", "data2", "x"]),
        1..4,
    )
    .prop_map(|s| s.into_iter().map(String::from).collect())
}

fn abs(segments: &[String]) -> String {
    format!("/{}", segments.join("/"))
}

/// Requests with one mount per distinct alias set; mount `i` at `/m{i}`.
fn staged(aliases: &[Vec<String>]) -> Option<StagingMap> {
    let mounts: Vec<_> = aliases
        .iter()
        .enumerate()
        .map(|(i, a)| json!({"name": format!("m{i}"), "persistentVolumeClaim": format!("claim-{i}"), "mountPath": format!("/m{i}"), "aliases": [abs(a)]}))
        .collect();
    let request = json!({
        "apiVersion": "tao-k8s/v1", "kind": "ActionRequest", "metadata": {"name": "prop"},
        "spec": {
            "image": "nvcr.io/nvidia/tao/tao-toolkit:6.0.0-pyt", "networkArch": "dino", "action": "train",
            "command": {"args": ["dino"]}, "resources": {"gpusPerNode": 1},
            "storage": {"mounts": mounts}, "resultsDir": "/m0"
        }
    });
    let source = Source::new("prop.json", request.to_string());
    tao_k8s::compile(&source, &Options::default(), Templates::embedded())
        .ok()
        .map(|c| c.plan.staging_map)
}

#[test]
fn one_alias_for_two_mounts_is_refused() {
    let same = vec!["data".to_string()];
    assert!(staged(&[same.clone(), same]).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn rewrites_follow_the_longest_whole_segment_alias(
        // Distinct aliases: every generated request must compile, so no case passes unchecked.
        aliases in prop::collection::btree_set(segments(), 1..4)
            .prop_map(|set| set.into_iter().collect::<Vec<_>>()),
        path in segments(),
        rest in prop::collection::vec("[a-z]{1,3}", 0..2),
    ) {
        let map = staged(&aliases);
        prop_assert!(map.is_some(), "refused: {aliases:?}");
        let map = map.unwrap();
        let json = serde_json::to_string(&map).unwrap();
        prop_assert_eq!(&serde_json::from_str::<StagingMap>(&json).unwrap(), &map);

        let mut full = path.clone();
        full.extend(rest);
        let producer = abs(&full);
        // The expected mount: the longest alias that is `producer` or a parent of it.
        let best = aliases
            .iter()
            .enumerate()
            .filter(|(_, a)| full.len() >= a.len() && full[..a.len()] == a[..])
            .max_by_key(|(_, a)| a.len());
        match (map.rewrite(&producer), best) {
            (Rewrite::Rewritten(new), Some((i, a))) => {
                let tail = &full[a.len()..];
                let expected = if tail.is_empty() { format!("/m{i}") } else { format!("/m{i}/{}", tail.join("/")) };
                prop_assert_eq!(new, expected);
            }
            (Rewrite::Unchanged, None) => {}
            (Rewrite::Unchanged, Some((i, _))) => prop_assert!(producer == format!("/m{i}"), "{producer} was not rewritten"),
            (other, best) => prop_assert!(false, "{producer}: {other:?} with best {best:?}"),
        }
    }
}
