//! State under real concurrency: several processes hit the same files at once.
//!
//! Child processes are this test binary re-executed with `CAPT_HOOK_STATE_TEST_CHILD` naming what
//! to do; the `child` test is a no-op in a normal run.

// A test fails by panicking: unwrap and expect are how it says what broke.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capt_hook_state::{
    Deque, DurableRoots, DurableState, FireCounter, LockWait, SessionStore, StateError,
    WorkflowState,
};

const CHILD: &str = "CAPT_HOOK_STATE_TEST_CHILD";
const ROOT: &str = "CAPT_HOOK_STATE_TEST_ROOT";

#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default)]
struct Counter {
    n: u64,
}

#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default)]
struct ReviewState {
    intent: Option<String>,
    edits: Vec<String>,
    ran_tests: bool,
}
impl WorkflowState for ReviewState {
    const NAME: &'static str = "review";
}

#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default)]
struct Learned {
    items: Deque<String, 64>,
}
impl DurableState for Learned {}

const INCREMENTS: u64 = 200;
const FIRE_CAP: u32 = 5;
const RESERVE_ROUNDS: u32 = 25;

#[test]
#[ignore = "entry point of the child processes other tests start"]
fn child() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    let root = PathBuf::from(std::env::var(ROOT).unwrap());
    wait_for_go(&root);
    let store = SessionStore::for_session(&root, Some("sess"));
    match mode.as_str() {
        "increment" => {
            for _ in 0..INCREMENTS {
                store.mutate(|c: &mut Counter| c.n += 1).unwrap();
            }
        }
        "reserve" => {
            let counter = FireCounter::new(&store, "pack:capped", None);
            let me = std::process::id();
            let mut log = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(root.join("fires.log"))
                .unwrap();
            for round in 0..RESERVE_ROUNDS {
                if let Some(r) = counter.reserve(FIRE_CAP) {
                    // Hold the reservation a moment, as a running handler would.
                    std::thread::sleep(Duration::from_micros(300));
                    if (me + round).is_multiple_of(3) {
                        writeln!(log, "{me} {round}").unwrap();
                        r.commit();
                    }
                }
            }
        }
        "durable" => {
            let roots = DurableRoots {
                state_root: root.clone(),
                repo_root: Some(root.join("repo")),
            };
            let me = std::process::id().to_string();
            Learned::mutate(&roots, |l| l.items.append(me)).unwrap();
        }
        "root" => println!("ROOT={}", capt_hook_state::state_root().display()),
        other => panic!("unknown child mode {other}"),
    }
}

fn wait_for_go(root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !root.join("go").exists() {
        assert!(Instant::now() < deadline, "never told to go");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Starts `n` children in `mode`, releases them together, and waits for all of them.
fn run_children(root: &Path, mode: &str, n: usize) {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<Child> = (0..n)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child",
                    "--ignored",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD, mode)
                .env(ROOT, root)
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::fs::write(root.join("go"), "").unwrap();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a {mode} child failed");
    }
}

#[test]
fn sixteen_processes_mutating_one_slot_lose_no_increment() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    run_children(dir.path(), "increment", 16);
    let store = SessionStore::for_session(dir.path(), Some("sess"));
    let n = store.load::<Counter>().n;
    println!(
        "16 processes x {INCREMENTS} mutate: {n} in {:?}",
        started.elapsed()
    );
    assert_eq!(n, 16 * INCREMENTS);
}

#[test]
fn thirty_two_processes_never_exceed_a_fire_cap() {
    let dir = tempfile::tempdir().unwrap();
    run_children(dir.path(), "reserve", 32);
    let fired = std::fs::read_to_string(dir.path().join("fires.log")).unwrap_or_default();
    let store = SessionStore::for_session(dir.path(), Some("sess"));
    let counter = FireCounter::new(&store, "pack:capped", None);
    assert_eq!(
        fired.lines().count(),
        FIRE_CAP as usize,
        "delivered fires:\n{fired}"
    );
    assert_eq!(counter.count(), FIRE_CAP);
    assert!(counter.reserve(FIRE_CAP).is_none());
}

#[test]
fn concurrent_durable_mutates_keep_every_item() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    run_children(dir.path(), "durable", 20);
    let roots = DurableRoots {
        state_root: dir.path().to_path_buf(),
        repo_root: Some(dir.path().join("repo")),
    };
    assert_eq!(Learned::load(&roots).items.len(), 20);
}

#[test]
fn a_corrupt_file_is_kept_as_bak_and_the_store_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::for_session(dir.path(), Some("sess"));
    let path = ReviewState::slot(&store).path().unwrap().to_path_buf();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "{\"edits\": [\"a.py\"], \"ran_tests\": tr").unwrap();

    // Reads fall back to the default; a strict read says what is wrong.
    assert_eq!(ReviewState::slot(&store).get(), None);
    assert_eq!(ReviewState::load(&store), ReviewState::default());
    let err = ReviewState::slot(&store).read().unwrap_err();
    assert!(matches!(err, StateError::Corrupt { .. }));
    assert!(err.to_string().contains("review_state.json"), "{err}");

    // The next write moves the bad file aside instead of overwriting it.
    ReviewState::mutate(&store, |s| s.edits.push("b.py".into())).unwrap();
    assert_eq!(ReviewState::load(&store).edits, ["b.py"]);
    let baks = backups(&path);
    assert_eq!(baks.len(), 1);
    assert_eq!(
        std::fs::read_to_string(&baks[0]).unwrap(),
        "{\"edits\": [\"a.py\"], \"ran_tests\": tr"
    );

    // A schema mismatch counts as corrupt too, and a plain `set` preserves it as well.
    std::fs::write(&path, r#"{"edits": "not a list"}"#).unwrap();
    assert_eq!(ReviewState::slot(&store).get(), None);
    ReviewState {
        intent: Some("refactor".into()),
        ..Default::default()
    }
    .save(&store)
    .unwrap();
    assert_eq!(backups(&path).len(), 2);
    assert_eq!(
        ReviewState::load(&store).intent.as_deref(),
        Some("refactor")
    );

    // A valid file is simply replaced.
    ReviewState::default().save(&store).unwrap();
    assert_eq!(backups(&path).len(), 2);
}

fn backups(path: &Path) -> Vec<PathBuf> {
    let name = format!("{}.bak.", path.file_name().unwrap().to_string_lossy());
    let mut v: Vec<PathBuf> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&name))
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

#[test]
fn a_nested_mutate_times_out_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::for_session(dir.path(), Some("sess"));
    let slot = store.slot::<Counter>();
    let inner = slot
        .mutate(|_outer| {
            slot.mutate_with(LockWait::Timeout(Duration::from_millis(50)), |c| c.n += 1)
        })
        .unwrap();
    assert!(matches!(inner, Err(StateError::LockTimeout { .. })));
    assert_eq!(store.load::<Counter>().n, 0);
}

#[test]
fn a_failed_or_panicking_mutate_saves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::for_session(dir.path(), Some("sess"));
    let slot = store.slot::<Counter>();
    slot.mutate(|c| c.n = 1).unwrap();
    let r = slot.try_mutate(LockWait::Forever, |c| {
        c.n = 99;
        Err::<(), _>("handler failed")
    });
    assert_eq!(r.unwrap(), Err("handler failed"));
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = slot.mutate(|c| {
            c.n = 98;
            panic!("boom");
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(store.load::<Counter>().n, 1);
    // The lock was released by the unwinding.
    slot.mutate_with(LockWait::NoWait, |c| c.n += 1).unwrap();
    assert_eq!(store.load::<Counter>().n, 2);
}

#[test]
fn the_state_root_moves_with_the_environment_variable() {
    // The variable is set only in children, so this test cannot disturb the others.
    let dir = tempfile::tempdir().unwrap();
    let root_of = |value: &str| {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child",
                "--ignored",
                "--test-threads=1",
                "--quiet",
                "--nocapture",
            ])
            .env(CHILD, "root")
            .env(ROOT, dir.path())
            .env("CAPTAIN_HOOK_STATE_DIR", value)
            .env("HOME", dir.path().join("home"))
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("ROOT="))
            .unwrap()
            .to_owned();
        PathBuf::from(line)
    };
    std::fs::write(dir.path().join("go"), "").unwrap();
    assert_eq!(root_of("/tmp/elsewhere"), Path::new("/tmp/elsewhere"));
    assert_eq!(root_of(""), dir.path().join("home/.claude/state"));
}
