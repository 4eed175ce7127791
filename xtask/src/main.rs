//! `cargo xtask dist | install | demo | bench | e2e-claude | e2e-agents | cc-surface |
//! guard-bench`: release builds, a user install, a live demo against a throwaway host, the
//! runtime benchmarks, the real-client suites (Claude Code; Codex and Gemini CLI), the pinned
//! Claude Code's hook events against our table, and the builtin packs measured on the
//! destructive-command guards' own corpora.

mod app;
mod bench;
mod bench_rust;
mod cc_surface;
mod dist;
mod e2e;
mod guard_bench;
mod install_sh;
#[cfg(test)]
mod layers;
mod pie;
mod prebuilt;
mod release;
mod sandbox;
mod workspace;

use std::process::ExitCode;

// Re-exported so the commands name the shared helpers as `crate::…`; the items live in
// `workspace` and `dist`, which import nothing from this file.
pub use dist::{
    RUNTIME_BINS, SDK_CRATES, StaticToolchain, build, dist, install, install_from, install_into,
    installed_bin_dir,
};
pub use workspace::{cargo, copy_dir, on_path, run_cargo, target_dir, workspace_root};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dist") => dist().map(|_| ()),
        Some("install") => install(&args[1..]),
        Some("release") => release::run(&args[1..]),
        Some("release-e2e") => install_sh::run(&args[1..]),
        Some("app") => app::run(&args[1..]),
        Some("demo") => demo(),
        Some("bench") => bench::run(&args[1..]),
        Some("e2e-claude") => e2e::run(&args[1..]),
        Some("e2e-agents") => e2e::agents::run(&args[1..]),
        Some("cc-surface") => cc_surface::run(&args[1..]),
        Some("guard-bench") => guard_bench::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask dist | install [--service] | release [--key FILE] [--out DIR] [--bins DIR] [--target TRIPLE] [--prebuilt-sdk] | release-e2e --bins DIR | app [--bins DIR] [--out DIR] | demo | bench [--quick] [--only PARTS] | e2e-claude [--only NAME] | e2e-agents [--only codex|gemini|CASE] [--bins DIR] | cc-surface [--binary PATH] | guard-bench [--check] [--cli PATH] [--only PEERS]"
            );
            return ExitCode::from(1);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::from(1)
        }
    }
}
/// `demo`: a throwaway host in a temp HOME, real events through `hook`, each verdict printed.
fn demo() -> anyhow::Result<()> {
    let bins = build(false)?;
    let sandbox = sandbox::Sandbox::new(&bins, "demo")?;
    let project = sandbox.project(
        "demo-project",
        &[(
            "guards.toml",
            "[[hook]]\nkind = \"block_command\"\nargv = [\"git\", \"stash\"]\nreason = \"use jj shelve instead\"\n\n\
             [[hook]]\nkind = \"warn_command\"\nargv = [\"cargo\", \"publish\"]\nevents = \"PreToolUse\"\nmessage = \"publishing: double-check the version\"\n\n\
             [[hook]]\nkind = \"gate\"\nmessage = \"run the tests before you stop\"\n",
        )],
    )?;
    let transcript = project.join("transcript.jsonl");
    std::fs::write(
        &transcript,
        concat!(
            r#"{"type":"user","message":{"role":"user","content":"tidy the repo"},"uuid":"u1"}"#,
            "\n",
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]},"uuid":"a1"}"#,
            "\n"
        ),
    )?;
    let mut stops_seen = false;
    let host = sandbox.start_host()?;
    println!("host pid {host} on {}", sandbox.socket().display());
    // Each event with the verdict it must get, so `demo` doubles as a smoke test in CI.
    let mut wrong = Vec::new();
    for (event, command, expected) in [
        (
            "PreToolUse",
            Some("git stash pop"),
            "\"permissionDecision\":\"deny\"",
        ),
        (
            "PreToolUse",
            Some("cargo publish --dry-run"),
            "double-check the version",
        ),
        ("PreToolUse", Some("ls -la"), ""),
        // A gate blocks the first Stop of a turn and lets the next one through: no loop.
        ("Stop", None, "\"decision\":\"block\""),
        ("Stop", None, ""),
    ] {
        let mut payload = sandbox::payload(event, &project, command, "demo");
        if event == "Stop" {
            // The gate reads the turn from the session's transcript; the second Stop is the
            // continuation Claude Code marks `stop_hook_active`.
            let mut v: serde_json::Value = serde_json::from_slice(&payload)?;
            v["transcript_path"] = transcript.display().to_string().into();
            v["stop_hook_active"] = std::mem::replace(&mut stops_seen, true).into();
            payload = v.to_string().into_bytes();
        }
        let out = sandbox.hook(event, &payload)?;
        let label = command
            .map(|c| format!("{event} `{c}`"))
            .unwrap_or_else(|| event.to_owned());
        let verdict = String::from_utf8_lossy(&out.stdout);
        let verdict = verdict.trim();
        println!(
            "{label:<36} exit {} {}",
            out.status.code().unwrap_or(-1),
            if verdict.is_empty() {
                "(no verdict: allowed)"
            } else {
                verdict
            }
        );
        let ok = out.status.code() == Some(0)
            && if expected.is_empty() {
                verdict.is_empty()
            } else {
                verdict.contains(expected)
            };
        if !ok {
            wrong.push(label);
        }
    }
    sandbox.shutdown()?;
    println!("host stopped");
    if !wrong.is_empty() {
        anyhow::bail!("unexpected verdicts for: {}", wrong.join(", "));
    }
    Ok(())
}
