//! Rust hook projects from the command line: `init --rust` scaffolds one, `build` compiles it
//! into its per-project cache, and `test` builds it and runs the inline tests of every hook the
//! built worker serves (its Rust hooks, then the TOML files).

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context as _, bail};
use capt_hook_rust_project::{Cache, WORKER_BIN, crate_dir, sdk_dir, sdk_id, source_hash};

/// The scaffold's manifest; `{sdk}` is the SDK's `captain-hook` crate.
const MANIFEST: &str = r#"# This project's hooks in Rust: `capt-hook build` compiles them into the worker the host
# runs for this project, `capt-hook test` runs their inline tests. Its own workspace, so it
# never joins (or touches the build of) a workspace around it.
[package]
name = "project-hooks"
version = "0.1.0"
edition = "2024"
publish = false

[[bin]]
name = "capt-hook-project-worker"
path = "src/main.rs"

[dependencies]
captain-hook = { path = "{sdk}" }

[profile.release]
strip = true

[workspace]
"#;

/// The scaffold's `main`: one handler hook with inline tests, then the worker loop.
const MAIN: &str = r#"//! This project's hooks in Rust. They register first; the TOML files beside this package load
//! after them. `capt-hook test` runs the inline tests of both.

use std::process::ExitCode;

use captain_hook::core::EventKind;
use captain_hook::{Expect, HookResult, Input, Registry, on};

// The allocator the stock worker runs on (an event's small allocations cost less).
#[global_allocator]
static ALLOC: captain_hook::Allocator = captain_hook::Allocator;

fn main() -> ExitCode {
    let mut hooks = Registry::new();
    let added = hooks.add(
        "project",
        on(&[EventKind::PreToolUse], |evt| {
            let reads_env = evt.command().is_some_and(|c| c.contains(".env"));
            Ok(reads_env.then(|| {
                HookResult::block("This project keeps its secrets in .env: leave it alone.")
            }))
        })
        .name("no-dotenv")
        .test(Input::command("cat .env"), Expect::block().matching("secrets"))
        .test(Input::command("ls -la"), Expect::allow()),
    );
    if let Err(e) = added {
        eprintln!("a hook definition is invalid: {e}");
        return ExitCode::from(1);
    }
    captain_hook::serve(hooks)
}
"#;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `capt-hook init --rust`: the package, never over existing files.
pub fn init(root: &Path) -> anyhow::Result<ExitCode> {
    let dir = crate_dir(root);
    let Some(sdk) = sdk_dir(env) else {
        bail!(
            "no captain-hook SDK found: install it with `cargo xtask install`, or set {} to a \
             checkout of captain-hook",
            capt_hook_proto::env::CAPT_HOOK_SDK
        );
    };
    let krate = sdk.join("crates").join("captain-hook");
    if !krate.join("Cargo.toml").is_file() {
        bail!(
            "{} is not a captain-hook SDK (no crates/captain-hook/Cargo.toml)",
            sdk.display()
        );
    }
    let files = [
        (
            dir.join("Cargo.toml"),
            MANIFEST.replace("{sdk}", &krate.display().to_string()),
        ),
        (dir.join("src").join("main.rs"), MAIN.to_owned()),
    ];
    if let Some((existing, _)) = files.iter().find(|(p, _)| p.exists()) {
        eprintln!("{} already exists; nothing written", existing.display());
        return Ok(ExitCode::from(1));
    }
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("Created {}", path.display());
    }
    // The SDK's lock file pins the versions its install already built, so the first build
    // resolves without the network.
    let lock = dir.join("Cargo.lock");
    if !lock.exists() && sdk.join("Cargo.lock").is_file() {
        std::fs::copy(sdk.join("Cargo.lock"), &lock)
            .with_context(|| format!("writing {}", lock.display()))?;
    }
    println!("Next: capt-hook build, then capt-hook test");
    Ok(ExitCode::SUCCESS)
}

/// What a build produced.
pub enum Built {
    /// The worker binary for the current sources.
    Exe(PathBuf),
    /// The build failed; cargo's output was shown.
    Failed,
}

/// `capt-hook build`: compiles the project into its cache unless the current sources are
/// already built. Cargo's output goes to stderr as cargo prints it.
pub fn build(root: &Path, quiet: bool) -> anyhow::Result<Built> {
    let dir = crate_dir(root);
    if !dir.join("Cargo.toml").is_file() {
        bail!(
            "{} is not a Rust hook project (no Cargo.toml); `capt-hook init --rust` makes one",
            dir.display()
        );
    }
    let sdk = sdk_id(sdk_dir(env).as_deref());
    let cache = Cache::for_root(root, env);
    if let Err(e) = settle_lock(&dir) {
        // Recorded under the sources' hash as they stand (cargo changed nothing), so the host
        // reports it and does not rebuild these sources on every worker start.
        let hash = source_hash(&dir, &sdk).with_context(|| format!("reading {}", dir.display()))?;
        cache.record_failure(&hash, &format!("its last build failed: {e}"))?;
        return Err(e);
    }
    let hash = source_hash(&dir, &sdk).with_context(|| format!("reading {}", dir.display()))?;
    let exe = cache.exe(&hash);
    if exe.is_file() && cache.failure(&hash).is_none() {
        if !quiet {
            eprintln!("capt-hook: {} is up to date", exe.display());
        }
        return Ok(Built::Exe(exe));
    }
    let _lock = match cache.try_lock().context("taking the build lock")? {
        Some(lock) => lock,
        None => {
            eprintln!("capt-hook: waiting for the build already running for this project");
            cache.lock().context("waiting for the build lock")?
        }
    };
    // Another build may have finished these sources while this one waited.
    if exe.is_file() && cache.failure(&hash).is_none() {
        return Ok(Built::Exe(exe));
    }
    let target = cache.target_dir();
    let _target_lock = cache.lock_target().context("taking the build directory")?;
    if let Some(sdk) = sdk_dir(env) {
        seed_from_prebuilt(&sdk, &target, &dir);
    }
    let color = if std::io::stderr().is_terminal() {
        "always"
    } else {
        "never"
    };
    let mut child = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--bin", WORKER_BIN, "--color", color])
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        // The worker must say hello with the host's build identity.
        .env("CAPT_HOOK_BUILD", capt_hook_proto::BUILD)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .context("running cargo (is it on PATH?)")?;
    // Shown as cargo shows it, and its tail kept for the failure record the host reads.
    let mut tail: Vec<String> = Vec::new();
    if let Some(err) = child.stderr.take() {
        let mut out = std::io::stderr().lock();
        for line in BufReader::new(err).lines() {
            let line = line.unwrap_or_default();
            let _ = writeln!(out, "{line}");
            tail.push(line);
            if tail.len() > 40 {
                tail.remove(0);
            }
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    let now = source_hash(&dir, &sdk)?;
    if now != hash {
        eprintln!("capt-hook: the sources changed during the build; run `capt-hook build` again");
        return Ok(Built::Failed);
    }
    if !status.success() {
        let first = tail
            .iter()
            .find(|l| l.trim_start().starts_with("error"))
            .map(|l| strip_ansi(l))
            .unwrap_or_else(|| format!("cargo exited with {status}"));
        let record = format!(
            "its last build failed: {first}\n\n{}",
            tail.iter()
                .map(|l| strip_ansi(l))
                .collect::<Vec<_>>()
                .join("\n")
        );
        cache.record_failure(&hash, &record)?;
        eprintln!("capt-hook: the build failed; the host keeps serving the TOML hooks alone");
        return Ok(Built::Failed);
    }
    let built = target.join("release").join(WORKER_BIN);
    let exe = cache
        .install(&hash, &built)
        .with_context(|| format!("installing {}", built.display()))?;
    if let Err(why) = check_identity(&exe) {
        cache.record_failure(&hash, &why.to_string())?;
        eprintln!("capt-hook: {why}");
        return Ok(Built::Failed);
    }
    if !quiet {
        eprintln!("capt-hook: built {}", exe.display());
    }
    Ok(Built::Exe(exe))
}

/// Starts an empty shared target directory from the SDK's prebuilt dependencies when the
/// compiler cargo will run (`rustc -vV` in the project's directory, so a rustup override there
/// counts) built them; says what it did, or why a first build compiles them. Never fails the
/// build: without them cargo compiles everything, as it would have.
fn seed_from_prebuilt(sdk: &Path, target: &Path, project: &Path) {
    use capt_hook_rust_project::prebuilt::seed_target;
    if target
        .join(capt_hook_rust_project::prebuilt::PROFILE_DIR)
        .exists()
    {
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let local = Command::new(&rustc)
        .arg("-vV")
        .current_dir(project)
        .stdin(Stdio::null())
        .output();
    let local = match local {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => {
            eprintln!(
                "capt-hook: `{rustc} -vV` failed ({}); the SDK's prebuilt dependencies are not used",
                out.status
            );
            return;
        }
        Err(e) => {
            eprintln!(
                "capt-hook: cannot run `{rustc} -vV` ({e}); the SDK's prebuilt dependencies are not used"
            );
            return;
        }
    };
    match seed_target(sdk, target, &local) {
        Ok(seed) => {
            if let Some(note) = seed.note() {
                eprintln!("capt-hook: {note}");
            }
        }
        Err(e) => eprintln!(
            "capt-hook: copying the SDK's prebuilt dependencies into {} failed ({e}); this \
             first build compiles them",
            target.display()
        ),
    }
}

/// Lets cargo bring `Cargo.lock` up to date before the sources are hashed: the lock is a
/// source, and a build that rewrote it would be named by a hash its sources no longer have.
fn settle_lock(dir: &Path) -> anyhow::Result<()> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .context("running cargo metadata (is cargo on PATH?)")?;
    if !out.success() {
        // Not always the manifest: a rustup without a default toolchain fails here too.
        bail!(
            "`cargo metadata` failed on {} ({out}); cargo's error is above",
            dir.join("Cargo.toml").display()
        );
    }
    Ok(())
}

/// Why a built worker cannot serve: recorded as the build's failure, which the host reads.
#[derive(Debug, thiserror::Error)]
enum IdentityError {
    #[error("the built worker does not run: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the built worker's `version` is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error(
        "the built worker is build {build:?} (protocol {protocol:?}) but this captain-hook is \
         {} (protocol {}): point the project at this install's SDK",
        capt_hook_proto::BUILD,
        capt_hook_proto::PROTOCOL
    )]
    Mismatch {
        build: Option<String>,
        protocol: Option<u64>,
    },
}

/// The built worker must speak this build's protocol, or the host would refuse it at hello.
fn check_identity(exe: &Path) -> Result<(), IdentityError> {
    let out = Command::new(exe)
        .arg("version")
        .output()
        .map_err(IdentityError::Spawn)?;
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(IdentityError::NotJson)?;
    let (build, protocol) = (v["build"].as_str(), v["protocol"].as_u64());
    if build == Some(capt_hook_proto::BUILD)
        && protocol == Some(u64::from(capt_hook_proto::PROTOCOL))
    {
        Ok(())
    } else {
        Err(IdentityError::Mismatch {
            build: build.map(str::to_owned),
            protocol,
        })
    }
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `capt-hook test` for a Rust project: build, then the built worker runs every test.
pub fn test(root: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let exe = match build(root, true)? {
        Built::Exe(exe) => exe,
        Built::Failed => return Ok(ExitCode::from(1)),
    };
    let mut cmd = Command::new(&exe);
    cmd.arg("test").arg("--root").arg(root);
    if json {
        cmd.arg("--json");
    }
    let status = cmd
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Which hooks answer `capt-hook run` for a Rust hook project.
pub enum Current {
    /// The project's build for its current sources.
    Built(PathBuf),
    /// The TOML hooks alone, and the session is told this once (if anything).
    NotLive(Option<String>),
}

/// The project's current build, or why there is none (there is no host here to build it).
pub fn current(root: &Path) -> Current {
    use capt_hook_rust_project::Selection;
    match capt_hook_rust_project::select(root, sdk_dir(env).as_deref(), env) {
        Selection::Project { exe, .. } => Current::Built(exe),
        Selection::NotLive { build: true, .. } => {
            Current::NotLive(Some(capt_hook_rust_project::unbuilt_note(&crate_dir(root))))
        }
        Selection::NotLive { note, .. } => Current::NotLive(Some(note)),
        Selection::Stock => Current::NotLive(None),
    }
}

/// Hands one event to the project's build (`<worker> run`), its output and exit code relayed.
pub fn run(
    exe: &Path,
    root: &Path,
    event: &str,
    run_async: bool,
    stdin: &[u8],
) -> anyhow::Result<ExitCode> {
    let mut cmd = Command::new(exe);
    cmd.args(["run", event, "--root"]).arg(root);
    if run_async {
        cmd.arg("--async");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", exe.display()))?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin).context("writing the payload")?;
    }
    let status = child.wait().context("waiting for the project's worker")?;
    Ok(match status.code().and_then(|c| u8::try_from(c).ok()) {
        Some(code) => ExitCode::from(code),
        None => {
            eprintln!("capt-hook: {} ended with {status}", exe.display());
            ExitCode::from(1)
        }
    })
}
