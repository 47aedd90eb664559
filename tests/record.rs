//! Job records: the transition table, unique ids and no lost update across real concurrent
//! processes, a writer killed mid-write, and the `tao-k8s record` command line. Every test has
//! its own temporary state directory.

mod common;

use serde_json::Value;
use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tao_k8s::kube::names::is_dns1035_label;
use tao_k8s::record::{
    NewRecord, Record, RecordError, State, StorageTier, Store, rfc3339, state_dir,
};

use common::Tao;

fn fields() -> NewRecord {
    NewRecord {
        image: "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt".to_string(),
        network_arch: "dino".to_string(),
        action: "train".to_string(),
        storage_tier: StorageTier::A,
        results_dir: "/results/run1".to_string(),
        source: "user".to_string(),
    }
}

fn cli(dir: &Path) -> Tao {
    let mut cmd = common::tao();
    cmd.env("TAO_K8S_STATE_DIR", dir).arg("record");
    cmd
}

/// The real binary, for spawning many at once.
fn process(dir: &Path, args: &[&str]) -> Output {
    common::tao()
        .env("TAO_K8S_STATE_DIR", dir)
        .arg("record")
        .args(args)
        .stdin_null()
        .output()
        .unwrap()
}

const OPEN_ARGS: [&str; 11] = [
    "open",
    "--image",
    "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt",
    "--network-arch",
    "dino",
    "--action",
    "train",
    "--storage-tier",
    "A",
    "--results-dir",
    "/results/run1",
];

/// A fresh record brought to `state` along the shortest allowed path.
fn record_in(store: &Store, state: State) -> Record {
    use State::*;
    let path: &[State] = match state {
        Open => &[],
        Submitted => &[Submitted],
        Running => &[Submitted, Running],
        Succeeded => &[Submitted, Running, Succeeded],
        Failed => &[Failed],
        Canceled => &[Submitted, Canceled],
    };
    let mut record = store.open(fields()).unwrap();
    for &s in path {
        record = store.mark(&record.id, s, "test", None, None).unwrap();
    }
    assert_eq!(record.state, state);
    record
}

#[test]
fn transition_table() {
    use State::*;
    // Written out rather than taken from `State::allows`, so the table is checked, not echoed.
    let allowed = [
        (Open, Submitted),
        (Open, Running),
        (Open, Failed),
        (Open, Canceled),
        (Submitted, Running),
        (Submitted, Failed),
        (Submitted, Canceled),
        (Running, Running),
        (Running, Succeeded),
        (Running, Failed),
        (Running, Canceled),
    ];
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    for from in State::ALL {
        for to in State::ALL {
            let before = record_in(&store, from);
            let result = store.mark(&before.id, to, "user", Some("why"), None);
            let after = store.show(&before.id).unwrap();
            if from == to && allowed.contains(&(from, to)) {
                assert_eq!(result.unwrap(), before, "{from} -> {to} is a no-op");
                assert_eq!(after, before);
            } else if allowed.contains(&(from, to)) {
                let marked = result.unwrap();
                assert_eq!(marked, after);
                assert_eq!(after.state, to);
                assert_eq!(after.history[..before.history.len()], before.history[..]);
                let last = after.history.last().unwrap();
                assert_eq!(after.history.len(), before.history.len() + 1);
                assert_eq!(
                    (last.state, &*last.source, last.reason.as_deref()),
                    (to, "user", Some("why"))
                );
            } else {
                let err = result.unwrap_err();
                assert!(
                    matches!(err, RecordError::InvalidTransition { from: f, to: t, .. } if f == from && t == to),
                    "{from} -> {to}: {err:?}"
                );
                let message = err.to_string();
                assert!(
                    message.contains(from.as_str()) && message.contains(to.as_str()),
                    "{message}"
                );
                assert_eq!(after, before, "a refused mark changes nothing");
            }
        }
    }
    // Terminal records refuse every mark.
    for terminal in [Succeeded, Failed, Canceled] {
        let record = record_in(&store, terminal);
        for to in State::ALL {
            assert!(
                store
                    .mark(&record.id, to, "user", None, Some("ns/job"))
                    .is_err()
            );
        }
        assert_eq!(store.show(&record.id).unwrap(), record);
    }
}

#[test]
fn records_carry_fields_history_and_backend_ref() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let opened = store.open(fields()).unwrap();
    assert_eq!(
        (opened.platform.as_str(), opened.state),
        ("kubernetes", State::Open)
    );
    assert_eq!(opened.backend_ref, None);
    let id = &opened.id;
    store
        .mark(
            id,
            State::Submitted,
            "driver",
            None,
            Some("vision/tao-train-run1"),
        )
        .unwrap();
    let r = store
        .mark(id, State::Running, "driver", None, None)
        .unwrap();
    assert_eq!(r.backend_ref.as_deref(), Some("vision/tao-train-run1"));
    let states: Vec<_> = r.history.iter().map(|e| e.state).collect();
    assert_eq!(states, [State::Open, State::Submitted, State::Running]);
    let rfc3339 = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
    assert!(
        r.history.iter().all(|e| rfc3339.is_match(&e.at)),
        "{:?}",
        r.history
    );
    assert!(r.history.windows(2).all(|w| w[0].at <= w[1].at));
    // The stored file is snake_case JSON (the seed's names) with exactly the documented fields.
    let text = std::fs::read_to_string(dir.path().join(format!("records/{id}.json"))).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    let mut expected = [
        "action",
        "backend_ref",
        "history",
        "id",
        "image",
        "network_arch",
        "platform",
        "results_dir",
        "state",
        "storage_tier",
    ];
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(json["history"][1]["source"], "driver");
    assert_eq!(json["storage_tier"], "A");
    // A backend ref that is not <namespace>/<job-name> is refused before anything changes.
    let err = store
        .mark(id, State::Failed, "user", None, Some("Vision/x y"))
        .unwrap_err();
    assert!(matches!(err, RecordError::InvalidBackendRef(_)), "{err:?}");
    assert_eq!(store.show(id).unwrap(), r);
}

#[test]
fn timestamps_are_rfc3339_utc() {
    let at = |secs| rfc3339(std::time::UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), "1970-01-01T00:00:00Z");
    assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
    assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
    assert_eq!(at(1_796_200_267), "2026-12-02T08:31:07Z");
    assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
}

#[test]
fn state_dir_resolution() {
    fn env<'a>(pairs: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| OsString::from(p.1))
    }
    let all = [
        ("TAO_K8S_STATE_DIR", "/s"),
        ("XDG_STATE_HOME", "/x"),
        ("HOME", "/h"),
    ];
    assert_eq!(state_dir(env(&all)), Some("/s".into()));
    assert_eq!(state_dir(env(&all[1..])), Some("/x/tao-k8s".into()));
    // Empty counts as unset; a relative XDG_STATE_HOME is ignored, as the XDG spec says.
    let odd = [
        ("TAO_K8S_STATE_DIR", ""),
        ("XDG_STATE_HOME", "x"),
        ("HOME", "/h"),
    ];
    assert_eq!(state_dir(env(&odd)), Some("/h/.local/state/tao-k8s".into()));
    assert_eq!(state_dir(env(&[])), None);
}

#[test]
fn ids_and_backend_refs_cannot_escape() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    for id in ["../x", "a/b", "", "Tao-1", "1tao", "tao-", "tao.json"] {
        let err = store.show(id).unwrap_err();
        assert!(
            matches!(err, RecordError::InvalidId { .. }),
            "{id}: {err:?}"
        );
        let err = store
            .mark(id, State::Running, "user", None, None)
            .unwrap_err();
        assert!(
            matches!(err, RecordError::InvalidId { .. }),
            "{id}: {err:?}"
        );
    }
    let id = store.open(fields()).unwrap().id;
    for bad in [
        "vision",
        "../x/y",
        "a/b/c",
        "ns/",
        "/job",
        "Vision/job",
        "ns/job name",
    ] {
        let err = store
            .mark(&id, State::Submitted, "user", None, Some(bad))
            .unwrap_err();
        assert!(
            matches!(err, RecordError::InvalidBackendRef(_)),
            "{bad}: {err:?}"
        );
    }
    let ok = store.mark(
        &id,
        State::Submitted,
        "user",
        None,
        Some("vision/tao-train.v2"),
    );
    assert_eq!(
        ok.unwrap().backend_ref.as_deref(),
        Some("vision/tao-train.v2")
    );
}

#[test]
fn sixteen_processes_open_320_distinct_ids() {
    let dir = tempfile::tempdir().unwrap();
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                (0..20)
                    .map(|_| {
                        let out = process(&dir, &OPEN_ARGS);
                        assert!(out.status.success(), "{out:?}");
                        assert!(out.stderr.is_empty(), "{out:?}");
                        let id = String::from_utf8(out.stdout).unwrap();
                        id.strip_suffix('\n').expect("one line").to_string()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let per_worker: Vec<Vec<String>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let mut all = HashSet::new();
    for ids in &per_worker {
        // Sortable by time: one worker's ids, opened one after another, never go back in time.
        let times: Vec<_> = ids.iter().map(|id| &id[..19]).collect();
        assert!(times.is_sorted(), "{ids:?}");
        for id in ids {
            assert!(is_dns1035_label(id) && id.len() == 24, "{id}");
            assert!(all.insert(id.clone()), "duplicate id {id}");
        }
    }
    assert_eq!(all.len(), 320);
    let (listed, skipped) = Store::new(dir.path().to_path_buf()).list().unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    let listed_ids: Vec<_> = listed.iter().map(|r| r.id.clone()).collect();
    assert!(listed_ids.is_sorted());
    assert_eq!(listed_ids.into_iter().collect::<HashSet<_>>(), all);
    // Every file is whole JSON, and no temporary file was left behind.
    let mut files = 0;
    for entry in std::fs::read_dir(dir.path().join("records")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == ".lock" {
            continue;
        }
        assert!(name.ends_with(".json"), "stray file {name}");
        serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()).unwrap();
        files += 1;
    }
    assert_eq!(files, 320);
}

#[test]
fn threads_of_one_process_open_distinct_ids() {
    // `File::lock` is per open file, so threads of one process exclude each other too.
    let dir = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let store = Store::new(dir.path().to_path_buf());
            std::thread::spawn(move || {
                (0..25)
                    .map(|_| store.open(fields()).unwrap().id)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let ids: HashSet<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert_eq!(ids.len(), 200);
}

#[test]
fn concurrent_marks_lose_no_update() {
    // 8 processes race every record through SUBMITTED, RUNNING and a terminal state of their
    // own. SUBMITTED and terminal marks change state whenever they are accepted, so if a
    // read-modify-write were lost, more processes would see exit 0 than the history shows.
    use State::*;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let ids: Vec<String> = (0..4).map(|_| store.open(fields()).unwrap().id).collect();
    let terminal = |w: usize| [Succeeded, Failed, Canceled][w % 3];
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (dir, ids) = (dir.path().to_path_buf(), ids.clone());
            std::thread::spawn(move || {
                let source = format!("w{w}");
                let mut codes = Vec::new();
                for id in &ids {
                    for state in [Submitted, Running, terminal(w)] {
                        let out = process(&dir, &["mark", id, state.as_str(), "--source", &source]);
                        assert!(out.stdout.is_empty());
                        codes.push((id.clone(), state, out.status.code().unwrap()));
                    }
                }
                codes
            })
        })
        .collect();
    let codes: Vec<Vec<_>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for id in &ids {
        let record = store.show(id).unwrap();
        let accepted = |state: State| -> Vec<String> {
            let mut who = Vec::new();
            for (w, codes) in codes.iter().enumerate() {
                for (i, s, code) in codes {
                    assert!(*code == 0 || *code == 1, "{id} {s}: exit {code}");
                    if i == id && *s == state && *code == 0 {
                        who.push(format!("w{w}"));
                    }
                }
            }
            who
        };
        let h = &record.history;
        assert_eq!(h[0].state, Open);
        assert_eq!(h[1].state, Submitted);
        assert_eq!(
            accepted(Submitted),
            std::slice::from_ref(&h[1].source),
            "{h:?}"
        );
        let last = h.last().unwrap();
        assert!(
            last.state.is_terminal() && last.state == record.state,
            "{h:?}"
        );
        let winners: Vec<_> = [Succeeded, Failed, Canceled]
            .into_iter()
            .flat_map(accepted)
            .collect();
        assert_eq!(winners, std::slice::from_ref(&last.source), "{h:?}");
        assert_eq!(terminal(last.source[1..].parse().unwrap()), last.state);
        match h.len() {
            3 => {}
            4 => {
                assert_eq!(h[2].state, Running);
                assert!(accepted(Running).contains(&h[2].source), "{h:?}");
            }
            n => panic!("{n} history entries: {h:?}"),
        }
    }
}

/// Not a test on its own: the child of `killed_writer_leaves_the_old_record`. It takes the
/// store's lock, writes half a record into a temporary file as the store's writer would, says
/// so, and waits to be killed.
#[test]
fn killed_writer_child() {
    let Some(dir) = std::env::var_os("TAO_K8S_RECORD_TEST_CHILD") else {
        return;
    };
    let records = Path::new(&dir).join("records");
    let lock = std::fs::File::options()
        .write(true)
        .open(records.join(".lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut tmp = tempfile::NamedTempFile::new_in(&records).unwrap();
    tmp.write_all(b"{\n  \"id\": \"tao-").unwrap();
    tmp.as_file().sync_all().unwrap();
    std::fs::write(Path::new(&dir).join("ready"), "").unwrap();
    std::thread::sleep(Duration::from_secs(120));
    unreachable!("the parent kills this process");
}

#[test]
fn killed_writer_leaves_the_old_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let id = store.open(fields()).unwrap().id;
    let old = store
        .mark(&id, State::Submitted, "driver", None, Some("ns/job"))
        .unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TAO_K8S_RECORD_TEST_CHILD", dir.path())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.path().join("ready").exists() {
        assert!(
            start.elapsed() < common::HANG_GUARD,
            "the child never got the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A mark waits for the lock the child holds; readers do not wait.
    let (tx, rx) = mpsc::channel();
    let writer = {
        let (store, id) = (store.clone(), id.clone());
        std::thread::spawn(move || {
            tx.send(store.mark(&id, State::Running, "driver", None, None))
                .unwrap()
        })
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "mark ignored the lock"
    );
    assert_eq!(store.show(&id).unwrap(), old);
    child.kill().unwrap(); // SIGKILL: no destructor runs, the half-written file stays.
    child.wait().unwrap();
    // The lock died with the child, so the waiting mark goes through.
    let marked = rx.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
    writer.join().unwrap();
    assert_eq!(marked.state, State::Running);
    assert_eq!(marked.history[..2], old.history[..]);
    let strays: Vec<_> = std::fs::read_dir(dir.path().join("records"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert_eq!(
        strays.len(),
        1,
        "the killed writer's temporary file is still there"
    );
    assert_eq!(store.list().unwrap().0, std::slice::from_ref(&marked));
    let shown = cli(dir.path())
        .args(["show", &id, "--field", "state"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(shown.stdout).unwrap(), "RUNNING\n");
}

#[test]
fn corrupt_record_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let id = store.open(fields()).unwrap().id;
    let path = dir.path().join(format!("records/{id}.json"));
    std::fs::write(&path, "{\"id\": ").unwrap();
    let err = store.show(&id).unwrap_err();
    assert!(matches!(err, RecordError::Corrupt { .. }), "{err:?}");
    let out = cli(dir.path())
        .args(["show", &id])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains(&*path.to_string_lossy()));
}

#[test]
fn cli_open_prints_only_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(dir.path())
        .args(OPEN_ARGS)
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(out.stderr.is_empty());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let id = stdout.strip_suffix('\n').unwrap();
    assert!(is_dns1035_label(id) && id.starts_with("tao-"), "{stdout:?}");
    let record = Store::new(dir.path().to_path_buf()).show(id).unwrap();
    assert_eq!(
        (record.state, record.storage_tier),
        (State::Open, StorageTier::A)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("records")), 0o700);
        assert_eq!(mode(&dir.path().join(format!("records/{id}.json"))), 0o600);
    }
}

#[test]
fn cli_state_dir_from_xdg_state_home() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::tao()
        .env_remove("TAO_K8S_STATE_DIR")
        .env("XDG_STATE_HOME", dir.path())
        .arg("record")
        .args(OPEN_ARGS)
        .assert()
        .success()
        .get_output()
        .clone();
    let id = String::from_utf8(out.stdout).unwrap();
    assert!(
        dir.path()
            .join(format!("tao-k8s/records/{}.json", id.trim()))
            .exists()
    );
}

#[test]
fn cli_show_field_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let id = store.open(fields()).unwrap().id;
    let missing = cli(dir.path())
        .args(["show", &id, "--field", "backend_ref"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&missing.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("error: ") && stderr.contains("backend_ref"),
        "{stderr}"
    );
    cli(dir.path())
        .args([
            "mark",
            &id,
            "submitted",
            "--source",
            "driver",
            "--backend-ref",
            "vision/tao-train-run1",
        ])
        .assert()
        .success()
        .stdout("");
    cli(dir.path())
        .args(["show", &id, "--field", "backendRef"])
        .assert()
        .success()
        .stdout("vision/tao-train-run1\n");
    cli(dir.path())
        .args(["show", &id, "--field", "state"])
        .assert()
        .success()
        .stdout("SUBMITTED\n");
    // The names of tao_job_record.py, in snake_case, are the record's own.
    for (field, value) in [
        ("backend_ref", "vision/tao-train-run1\n"),
        ("results_dir", "/results/run1\n"),
        ("storage_tier", "A\n"),
    ] {
        cli(dir.path())
            .args(["show", &id, "--field", field])
            .assert()
            .success()
            .stdout(value);
    }
    cli(dir.path())
        .args(["show", &id, "--field", "backend_reference"])
        .assert()
        .code(1);
    let out = cli(dir.path())
        .args(["show", &id])
        .assert()
        .success()
        .get_output()
        .clone();
    // The stored file as it is, fields in their documented order.
    let stored = std::fs::read(dir.path().join(format!("records/{id}.json"))).unwrap();
    assert_eq!(out.stdout, stored);
    let shown: Record = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown, store.show(&id).unwrap());
    let history = cli(dir.path())
        .args(["show", &id, "--field", "history"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        serde_json::from_slice::<Value>(&history.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// The seed's command line: `open --platform kubernetes ...`; no other platform.
#[test]
fn cli_open_takes_the_seed_s_platform_option() {
    let dir = tempfile::tempdir().unwrap();
    let seed = [&["open", "--platform", "kubernetes"], &OPEN_ARGS[1..]].concat();
    let out = cli(dir.path())
        .args(&seed)
        .assert()
        .success()
        .get_output()
        .clone();
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let store = Store::new(dir.path().to_path_buf());
    assert_eq!(store.show(&id).unwrap().platform, "kubernetes");
    let slurm = [&["open", "--platform", "slurm"], &OPEN_ARGS[1..]].concat();
    let refused = cli(dir.path()).args(&slurm).assert().code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).to_string();
    assert!(
        stderr.contains("slurm") && stderr.contains("kubernetes"),
        "{stderr}"
    );
}

#[test]
fn cli_refusals_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let unknown = "tao-20000101-000000-0000";
    for args in [vec!["show", unknown], vec!["mark", unknown, "RUNNING"]] {
        let out = cli(dir.path())
            .args(&args)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: ") && stderr.contains(unknown),
            "{stderr}"
        );
    }
    let id = store.open(fields()).unwrap().id;
    cli(dir.path())
        .args(["mark", &id, "CANCELED", "--reason", "not needed"])
        .assert()
        .success();
    let out = cli(dir.path())
        .args(["mark", &id, "RUNNING"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CANCELED") && stderr.contains("RUNNING") && stderr.contains(&*id),
        "{stderr}"
    );
    assert_eq!(
        store
            .show(&id)
            .unwrap()
            .history
            .last()
            .unwrap()
            .reason
            .as_deref(),
        Some("not needed")
    );
}

#[test]
fn cli_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let id = Store::new(dir.path().to_path_buf())
        .open(fields())
        .unwrap()
        .id;
    let mut bad_tier = OPEN_ARGS.to_vec();
    bad_tier[8] = "B";
    for args in [
        vec!["mark", &id, "DONE"],
        vec!["open", "--image", "x"],
        bad_tier,
        vec!["show", "../../etc/passwd"],
        vec!["mark", "Tao-1", "RUNNING"],
        vec!["mark", &id, "SUBMITTED", "--backend-ref", "no-slash"],
        vec!["list", "--format", "yaml"],
        vec![],
    ] {
        cli(dir.path()).args(&args).assert().code(2);
    }
    // Nothing above touched the record.
    assert_eq!(
        Store::new(dir.path().to_path_buf())
            .show(&id)
            .unwrap()
            .history
            .len(),
        1
    );
}

#[test]
fn cli_list_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    cli(dir.path()).args(["list"]).assert().success().stdout("");
    let store = Store::new(dir.path().to_path_buf());
    let a = store.open(fields()).unwrap().id;
    let b = store
        .open(NewRecord {
            action: "evaluate".into(),
            ..fields()
        })
        .unwrap()
        .id;
    store
        .mark(
            &b,
            State::Submitted,
            "driver",
            None,
            Some("vision/tao-eval"),
        )
        .unwrap();
    let out = cli(dir.path())
        .args(["list"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let image = "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt";
    let mut expected = vec![
        vec![a.as_str(), "OPEN", "-", "train", image],
        vec![
            b.as_str(),
            "SUBMITTED",
            "vision/tao-eval",
            "evaluate",
            image,
        ],
    ];
    expected.sort();
    assert_eq!(rows, expected);
    let out = cli(dir.path())
        .args(["list", "--format", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let listed: Vec<Record> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed, store.list().unwrap().0);
}

/// Open and mark with a field of ~130 KB: refused at once (exit 1, the field and its limit
/// named, nothing written), so the store never holds a record that every later read refuses.
#[test]
fn cli_refuses_a_field_over_its_limit_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let id = store.open(fields()).unwrap().id;
    // Under the 128 KiB the kernel allows one argument.
    let huge = "x".repeat(100_000);
    for (flag, field, limit) in [
        ("--image", "image", 1024),
        ("--network-arch", "network_arch", 256),
        ("--action", "action", 256),
        ("--results-dir", "results_dir", 4096),
        ("--source", "source", 256),
    ] {
        let mut open = OPEN_ARGS.to_vec();
        let at = open.iter().position(|a| *a == flag);
        match at {
            Some(at) => open[at + 1] = &huge,
            None => open.extend([flag, &huge]),
        }
        let out = cli(dir.path())
            .args(&open)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.contains(&format!("field {field} "))
                && stderr.contains(&format!("limit of {limit} bytes"))
                && stderr.contains("100000 bytes"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    for args in [
        vec!["mark", &id, "FAILED", "--reason", &huge],
        vec!["mark", &id, "FAILED", "--source", &huge],
    ] {
        let out = cli(dir.path())
            .args(&args)
            .assert()
            .code(1)
            .get_output()
            .clone();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("limit of"), "{stderr}");
    }
    // Only the first record, untouched; a field at its limit is accepted.
    let (listed, skipped) = store.list().unwrap();
    assert!(skipped.is_empty());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, State::Open);
    let at_limit = "r".repeat(4096);
    cli(dir.path())
        .args(["mark", &id, "FAILED", "--reason", &at_limit])
        .assert()
        .success();
    cli(dir.path()).args(["show", &id]).assert().success();
}

/// Control characters (from a caller of the library, or a hand-edited file) are refused in
/// every text field, and the message shows them escaped, never raw.
#[test]
fn control_characters_are_refused_and_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    for (value, escaped) in [
        ("nvcr.io/x\0:1", "\\0"),
        ("nvcr.io/x\u{1b}[2J:1", "\\u{1b}"),
        ("nvcr.io/x\n:1", "\\n"),
        ("nvcr.io/x\u{9b}:1", "\\u{9b}"),
    ] {
        let err = store
            .open(NewRecord {
                image: value.into(),
                ..fields()
            })
            .unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, RecordError::InvalidField { field: "image", .. }),
            "{err:?}"
        );
        assert!(message.contains(escaped), "{message}");
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
    let id = store.open(fields()).unwrap().id;
    let out = cli(dir.path())
        .args([
            "mark",
            &id,
            "FAILED",
            "--reason",
            "stopped\u{1b}]0;owned\u{7}",
        ])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("field reason") && stderr.contains("\\u{1b}"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    let mut open = OPEN_ARGS.to_vec();
    open[2] = "nvcr.io/x\t:1";
    cli(dir.path()).args(&open).assert().code(1);
    assert_eq!(store.list().unwrap().0.len(), 1);
    // A record file edited to hold one is refused on read, escaped in the message.
    let path = dir.path().join(format!("records/{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"train\"", "\"train\\u001b[2J\"")).unwrap();
    let out = cli(dir.path())
        .args(["show", &id])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("field action") && !stderr.contains('\u{1b}'),
        "{stderr:?}"
    );
}

/// One record over the size a read accepts (written by an older version, or by hand) and one
/// that is not JSON: `list` names both on stderr and lists the others; exit 0.
#[test]
fn list_skips_and_names_bad_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let good = store.open(fields()).unwrap().id;
    let big = store.open(fields()).unwrap().id;
    let broken = store.open(fields()).unwrap().id;
    let path = |id: &str| dir.path().join(format!("records/{id}.json"));
    let text = std::fs::read_to_string(path(&big)).unwrap();
    let padded = text.replace("\"train\"", &format!("\"{}\"", "t".repeat(1_200_000)));
    std::fs::write(path(&big), padded).unwrap();
    std::fs::write(path(&broken), "{\"id\": ").unwrap();
    let (listed, skipped) = store.list().unwrap();
    assert_eq!(listed.iter().map(|r| &r.id).collect::<Vec<_>>(), [&good]);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    for format in ["text", "json"] {
        let out = cli(dir.path())
            .args(["list", "--format", format])
            .assert()
            .success()
            .get_output()
            .clone();
        let (stdout, stderr) = (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        );
        assert!(stdout.contains(&good) && !stdout.contains(&big) && !stdout.contains(&broken));
        for id in [&big, &broken] {
            assert!(
                stderr
                    .lines()
                    .any(|l| l.starts_with("warning: skipped") && l.contains(&**id)),
                "{stderr}"
            );
        }
    }
}

/// The seed's record command lines: `record mark ID --state CANCELED --source agent`, and
/// RUNNING right after open.
#[test]
fn the_seed_s_record_mark_line_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let open = process(dir.path(), &OPEN_ARGS);
    assert!(open.status.success());
    let id = String::from_utf8(open.stdout).unwrap().trim().to_string();
    for state in ["RUNNING", "CANCELED"] {
        let r = process(
            dir.path(),
            &["mark", &id, "--state", state, "--source", "agent"],
        );
        assert!(
            r.status.success(),
            "{state}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
    let r = process(dir.path(), &["show", &id, "--field", "state"]);
    assert_eq!(String::from_utf8_lossy(&r.stdout), "CANCELED\n");
    let both = process(dir.path(), &["mark", &id, "FAILED", "--state", "FAILED"]);
    assert_eq!(both.status.code(), Some(2));
}

/// The seed's lines as they are written in its runbook, with its shell variables set: `open`
/// with every option, `mark` binding the applied object with `--backend-ref=...` and closing
/// with `--state CANCELED --source agent`; `show` prints the seed's snake_case names, and
/// `show --field backend_ref` is the `<namespace>/<name>` a reattach reads.
#[test]
fn the_seed_s_record_lines_are_accepted_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"set -eu
IMAGE=nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt ARCH=dino ACTION=train TIER=A RESULTS_DIR=/results/run1
JOB_ID=$("$BANK/scripts/tao_job_record.py" open --platform kubernetes --image "$IMAGE" \
  --network-arch "$ARCH" --action "$ACTION" --storage-tier "$TIER" --results-dir "$RESULTS_DIR")
"$BANK/scripts/tao_job_record.py" mark "$JOB_ID" --state RUNNING --source agent --backend-ref=vision/tao-train-run1
"$BANK/scripts/tao_job_record.py" show "$JOB_ID" > "$TAO_K8S_STATE_DIR/shown.json"
"$BANK/scripts/tao_job_record.py" show "$JOB_ID" --field backend_ref > "$TAO_K8S_STATE_DIR/ref"
"$BANK/scripts/tao_job_record.py" list > "$TAO_K8S_STATE_DIR/listed"
"$BANK/scripts/tao_job_record.py" mark "$JOB_ID" --state CANCELED --source agent
"$BANK/scripts/tao_job_record.py" show "$JOB_ID" --field state > "$TAO_K8S_STATE_DIR/state"
"#;
    // `$BANK/scripts/tao_job_record.py` is `tao-k8s record`.
    let bank = dir.path().join("bank");
    std::fs::create_dir_all(bank.join("scripts")).unwrap();
    let tool = bank.join("scripts/tao_job_record.py");
    std::fs::write(
        &tool,
        format!("#!/bin/sh\nexec '{}' record \"$@\"\n", common::BIN),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&tool).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&tool, perms).unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let out = std::process::Command::new("bash")
        .args(["-c", script])
        .env("BANK", &bank)
        .env("TAO_K8S_STATE_DIR", &state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(state.join(name)).unwrap();
    assert_eq!(read("ref"), "vision/tao-train-run1\n");
    assert_eq!(read("state"), "CANCELED\n");
    let shown: Value = serde_json::from_str(&read("shown.json")).unwrap();
    for (key, value) in [
        ("backend_ref", "vision/tao-train-run1"),
        ("results_dir", "/results/run1"),
        ("network_arch", "dino"),
        ("storage_tier", "A"),
        ("state", "RUNNING"),
    ] {
        assert_eq!(shown[key], value, "{key} in {shown}");
    }
    for camel in ["backendRef", "resultsDir", "networkArch", "storageTier"] {
        assert!(shown.get(camel).is_none(), "{camel} in {shown}");
    }
    assert!(read("listed").contains("RUNNING") && read("listed").contains("vision/tao-train-run1"));
}

/// A record written before, with camelCase keys, still reads: `show`, `show --field` by
/// either name, `list`, and a mark, which writes it back with the snake_case keys.
#[test]
fn a_camel_case_record_written_before_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let id = "tao-20261130-101500-00ab";
    let records = dir.path().join("records");
    std::fs::create_dir_all(&records).unwrap();
    let before = serde_json::json!({
        "id": id,
        "platform": "kubernetes",
        "image": "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt",
        "networkArch": "dino",
        "action": "train",
        "storageTier": "A",
        "resultsDir": "/results/old",
        "backendRef": "vision/tao-train-old",
        "backendUid": "0f0e0d0c-0000-4000-8000-000000000001",
        "state": "RUNNING",
        "history": [
            {"state": "OPEN", "at": "2026-11-30T10:15:00Z", "source": "driver"},
            {"state": "RUNNING", "at": "2026-11-30T10:15:09Z", "source": "driver"}
        ]
    });
    std::fs::write(
        records.join(format!("{id}.json")),
        serde_json::to_vec_pretty(&before).unwrap(),
    )
    .unwrap();
    for field in ["backend_ref", "backendRef"] {
        cli(dir.path())
            .args(["show", id, "--field", field])
            .assert()
            .success()
            .stdout("vision/tao-train-old\n");
    }
    cli(dir.path())
        .args(["show", id, "--field", "backendUid"])
        .assert()
        .success()
        .stdout("0f0e0d0c-0000-4000-8000-000000000001\n");
    let out = cli(dir.path()).args(["show", id]).assert().success();
    let shown: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(shown["results_dir"], "/results/old");
    assert_eq!(shown["network_arch"], "dino");
    let out = cli(dir.path()).args(["list"]).assert().success();
    let listed = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        listed.contains(id) && listed.contains("vision/tao-train-old"),
        "{listed}"
    );
    cli(dir.path())
        .args(["mark", id, "--state", "SUCCEEDED", "--source", "agent"])
        .assert()
        .success();
    let stored: Value =
        serde_json::from_slice(&std::fs::read(records.join(format!("{id}.json"))).unwrap())
            .unwrap();
    assert_eq!(stored["backend_ref"], "vision/tao-train-old");
    assert_eq!(
        stored["backend_uid"],
        "0f0e0d0c-0000-4000-8000-000000000001"
    );
    assert!(stored.get("backendRef").is_none(), "{stored}");
}
