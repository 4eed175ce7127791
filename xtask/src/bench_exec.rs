//! The `exec` line of `cargo xtask bench`: the plugin's hook in *exec form*, as Claude Code
//! runs it now that hooks.json names the program and its arguments: `${CLAUDE_PLUGIN_ROOT}/bin/hook
//! run PreToolUse` spawned directly (no `sh -c`), warm host, the 100-hook project. Beside it, in
//! the same run and sample by sample: the old shell form, the same client asked to do nothing
//! (`--async`), and a static no-op built here, each spawned the same way with the same
//! environment and stdin.
//!
//! The ratio's floor is the static no-op: an executable of one page whose entry point calls
//! `exit_group(0)`, with no libc and no start-up at all, so it is what starting *any* process
//! costs here (fork or spawn, exec, exit, wait), and everything above it is ours: the client's
//! start-up (glibc's or musl's, std's), reading the payload, the round trip to the host and the
//! worker's evaluation. The `--async` line is the same client binary exiting right after
//! reading its arguments, started through the same link, which splits that remainder into the
//! client's start-up and the event itself.
//!
//! Two more floors, for context only (the ratio stays against the libc-free no-op): an empty C
//! program linked with musl as static-pie (`musl-gcc`), what starting any program with a libc
//! costs (musl's start-up, the self-relocation, its pages), and an empty Rust program linked as
//! the client is (musl, static-pie), which adds std's `main` wrapper: the client is `no_main`
//! and skips that part (crates/capt-hook-client/src/start.rs). The issue's own "static no-op"
//! was a normal static program, not a libc-free one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::bench::{median, pct, time};
use crate::sandbox::Sandbox;

/// A program that exits 0 at once: no libc, no start-up code, one syscall.
const NOOP: &str = r#"#![no_std]
#![no_main]

#[unsafe(no_mangle)]
pub extern "C" fn _start() -> ! {
    unsafe {
        #[cfg(target_arch = "x86_64")]
        core::arch::asm!("syscall", in("rax") 231, in("rdi") 0, options(noreturn));
        #[cfg(target_arch = "aarch64")]
        core::arch::asm!("svc 0", in("x8") 94, in("x0") 0, options(noreturn));
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
"#;

/// An empty Rust program: with the musl target, the same start-up as the client (musl's, std's,
/// static-pie's self-relocation) and nothing else.
const MUSL_NOOP: &str = "fn main() {}\n";

/// An empty C program.
const MUSL_C_NOOP: &str = "int main(void) { return 0; }\n";

/// Builds [`MUSL_C_NOOP`] into `dir` with musl's C compiler as static-pie; `None` (said) when
/// there is no musl C compiler.
fn build_musl_c_noop(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let toolchain = crate::dist::StaticToolchain::detect()?;
    let Some(cc) = toolchain.musl_cc() else {
        println!("exec  no musl C no-op (no musl-gcc: apt-get install musl-tools)");
        return Ok(None);
    };
    let mut cmd = Command::new(cc);
    cmd.args(["-O2", "-static-pie", "-o"]);
    optional_baseline(
        dir,
        "musl_c_noop.c",
        MUSL_C_NOOP,
        cmd,
        "musl C no-op",
        &format!("{cc} failed"),
    )
}

/// Builds [`MUSL_NOOP`] into `dir` as `cargo xtask dist` links the client (static-pie, musl);
/// `None` (said) when the musl target is not installed.
fn build_musl_noop(dir: &Path) -> anyhow::Result<Option<PathBuf>> {
    let triple = format!("{}-unknown-linux-musl", std::env::consts::ARCH);
    let mut cmd = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()));
    cmd.args(["--edition", "2024", "--target", &triple]).args([
        "-C",
        "opt-level=3",
        "-C",
        "panic=abort",
        "-o",
    ]);
    optional_baseline(
        dir,
        "musl_noop.rs",
        MUSL_NOOP,
        cmd,
        "musl no-op",
        &format!("{triple} not installed?"),
    )
}

/// Writes `source` to `dir/file` and runs `compiler` (its options up to `-o`) on it, into
/// `dir/<what, dashed>`; a compiler that fails leaves the line out, saying why (`hint`) with the
/// first line of its stderr.
fn optional_baseline(
    dir: &Path,
    file: &str,
    source: &str,
    mut compiler: Command,
    what: &str,
    hint: &str,
) -> anyhow::Result<Option<PathBuf>> {
    let src = dir.join(file);
    let out = dir.join(what.replace(' ', "-"));
    std::fs::write(&src, source)?;
    let built = compiler
        .arg(&out)
        .arg(&src)
        .output()
        .with_context(|| format!("running the compiler for the {what}"))?;
    if !built.status.success() {
        println!(
            "exec  no {what} ({hint}): {}",
            String::from_utf8_lossy(&built.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        return Ok(None);
    }
    Ok(Some(out))
}

/// Builds the static no-op into `dir`; returns its path.
pub(crate) fn build_noop(dir: &Path) -> anyhow::Result<PathBuf> {
    let src = dir.join("noop.rs");
    let out = dir.join("noop");
    std::fs::write(&src, NOOP)?;
    let built = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args([
            "--edition",
            "2024",
            "-C",
            "opt-level=2",
            "-C",
            "panic=abort",
        ])
        .args([
            "-C",
            "relocation-model=static",
            "-C",
            "target-feature=+crt-static",
        ])
        .args(["-C", "link-arg=-nostartfiles", "-C", "link-arg=-nostdlib"])
        .args(["-C", "link-arg=-static", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .context("running rustc for the static no-op")?;
    if !built.status.success() {
        bail!(
            "building the static no-op failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
    }
    Ok(out)
}

/// `program` with the environment `template` was given (the sandbox's: its HOME, runtime
/// dir, the variables it clears), so every line runs with the same environment.
fn like(template: &Command, program: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd
}

/// The exec form against the shell form, the client doing nothing and the static no-op, for
/// the installed plugin at `plugin`; `expected` is the warm answer the exec form must print.
pub fn run(
    sandbox: &Sandbox,
    plugin: &Path,
    payload_path: &Path,
    expected: &[u8],
    samples: usize,
) -> anyhow::Result<()> {
    if !(cfg!(target_os = "linux") && cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))) {
        println!("exec  skipped: its static no-op is built for Linux on x86_64 and aarch64 only");
        return Ok(());
    }
    let noop_path = build_noop(&sandbox.dir)?;
    let client = plugin.join("bin/hook");
    // What Claude Code sets for a plugin's hook, whichever form it runs.
    let mut template = sandbox.command("hook");
    template.env("CLAUDE_PLUGIN_ROOT", plugin);
    let mut exec = like(&template, &client);
    exec.args(["run", "PreToolUse"]);
    let mut shell = sandbox.shell("\"${CLAUDE_PLUGIN_ROOT}/bin/hook\" run PreToolUse");
    shell.env("CLAUDE_PLUGIN_ROOT", plugin);
    let mut idle = like(&template, &client);
    idle.args(["run", "PreToolUse", "--async"]);
    let mut noop = like(&template, &noop_path);
    // The fairer floor for a client written in Rust: the same runtime's start-up, no work.
    // When it cannot be built, the libc-free no-op stands in (its line then says so).
    let musl_noop_path = build_musl_noop(&sandbox.dir)?;
    let mut musl_noop = like(&template, musl_noop_path.as_deref().unwrap_or(&noop_path));
    let musl_c_path = build_musl_c_noop(&sandbox.dir)?;
    let mut musl_c = like(&template, musl_c_path.as_deref().unwrap_or(&noop_path));

    // The exec form answers as `hook run` does; then a few untimed runs of each, so none pays
    // for its first start (page cache, the link's lookup).
    let out = like(&template, &client)
        .args(["run", "PreToolUse"])
        .stdin(std::fs::File::open(payload_path)?)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()?;
    // Anything on stderr means the client fell back (local evaluation), which is not the path
    // being measured.
    if !out.status.success() || out.stdout != expected || !out.stderr.is_empty() {
        bail!(
            "the exec form answered differently ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for _ in 0..10 {
        for cmd in [
            &mut exec,
            &mut shell,
            &mut idle,
            &mut noop,
            &mut musl_noop,
            &mut musl_c,
        ] {
            time(cmd, payload_path)?;
        }
    }

    let mut lines: [Vec<f64>; 6] = Default::default();
    for _ in 0..samples {
        for (cmd, line) in [
            &mut exec,
            &mut shell,
            &mut idle,
            &mut noop,
            &mut musl_noop,
            &mut musl_c,
        ]
        .into_iter()
        .zip(lines.iter_mut())
        {
            line.push(time(cmd, payload_path)?);
        }
    }
    let [
        mut exec_ms,
        mut shell_ms,
        mut idle_ms,
        mut noop_ms,
        mut musl_ms,
        mut musl_c_ms,
    ] = lines;
    let (exec_p50, shell_p50, idle_p50, noop_p50, musl_p50, musl_c_p50) = (
        median(&mut exec_ms),
        median(&mut shell_ms),
        median(&mut idle_ms),
        median(&mut noop_ms),
        median(&mut musl_ms),
        median(&mut musl_c_ms),
    );
    println!(
        "== exec form (installed plugin, warm host, 100-hook project, {samples} samples each, interleaved)"
    );
    println!(
        "exec  bin/hook run PreToolUse (no shell)      median {exec_p50:7.3} ms   p90 {:7.3} ms   ratio {:.2}x static no-op (target <= 1.3), {:.2}x musl no-op, {:.2}x --async",
        pct(&exec_ms, 0.9),
        exec_p50 / noop_p50,
        exec_p50 / musl_p50,
        exec_p50 / idle_p50
    );
    println!(
        "      sh -c '\"$ROOT/bin/hook\" run PreToolUse'  median {shell_p50:7.3} ms   p90 {:7.3} ms   ratio {:.2}x",
        pct(&shell_ms, 0.9),
        shell_p50 / noop_p50
    );
    println!(
        "      bin/hook run PreToolUse --async         median {idle_p50:7.3} ms   p90 {:7.3} ms   ratio {:.2}x (the client, nothing to do)",
        pct(&idle_ms, 0.9),
        idle_p50 / noop_p50
    );
    println!(
        "      static no-op (exit_group(0), no libc)   median {noop_p50:7.3} ms   p90 {:7.3} ms",
        pct(&noop_ms, 0.9)
    );
    println!(
        "      musl no-op (fn main() {{}}, static-pie)  median {musl_p50:7.3} ms   p90 {:7.3} ms   ratio {:.2}x{}",
        pct(&musl_ms, 0.9),
        musl_p50 / noop_p50,
        if musl_noop_path.is_some() {
            " (musl and std's main wrapper, nothing else)"
        } else {
            " (not built: the libc-free no-op again)"
        }
    );
    println!(
        "      musl C no-op (int main, static-pie)     median {musl_c_p50:7.3} ms   p90 {:7.3} ms   ratio {:.2}x{}",
        pct(&musl_c_ms, 0.9),
        musl_c_p50 / noop_p50,
        if musl_c_path.is_some() {
            " (musl's start-up, nothing else)"
        } else {
            " (not built: the libc-free no-op again)"
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each floor the exec part builds starts and exits 0 as it is spawned there; one whose
    /// toolchain is missing says so and stands aside (`None`), never failing the bench.
    #[test]
    fn the_floors_build_and_exit_cleanly() {
        if !(cfg!(target_os = "linux")
            && cfg!(any(target_arch = "x86_64", target_arch = "aarch64")))
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut floors = vec![build_noop(dir.path()).unwrap()];
        floors.extend(build_musl_noop(dir.path()).unwrap());
        floors.extend(build_musl_c_noop(dir.path()).unwrap());
        for floor in &floors {
            let out = Command::new(floor).output().unwrap();
            assert!(out.status.success(), "{}: {}", floor.display(), out.status);
            assert!(out.stdout.is_empty() && out.stderr.is_empty());
        }
    }
}
