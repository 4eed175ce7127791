//! `install.sh` driven as a user runs it, and `cargo xtask release-e2e --bins DIR`: a release
//! signed with the test key, installed by `install.sh` into an empty HOME with no Rust
//! toolchain on PATH, then a real event through the installed plugin's `bin/hook`, denied by
//! the builtin packs; and the same release with one flipped byte refused, HOME unchanged.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context, bail};
use capt_hook_sign::SigningKey;

use crate::release::{self, MANIFEST};
use crate::workspace::workspace_root;

/// The vendored test key pair's files.
pub fn test_key_files() -> (PathBuf, PathBuf) {
    let dir = workspace_root().join("tests/fixtures/release-key");
    (dir.join("test.key"), dir.join("test.pub"))
}

/// Programs a user's PATH never has here: a Rust toolchain (the point of a release), and
/// `minisign` when the test wants install.sh's own openssl check.
const NO_RUST: [&str; 3] = ["cargo", "rustc", "rustup"];

/// A directory of links to the system's programs (`/usr/bin`, `/bin`, `/usr/sbin`, `/sbin`)
/// less those in [`NO_RUST`] and `hide`: the whole PATH install.sh runs with.
pub fn tool_path(dir: &Path, hide: &[&str]) -> anyhow::Result<PathBuf> {
    let tools = dir.join("tools");
    std::fs::create_dir_all(&tools)?;
    for sys in ["/usr/bin", "/bin", "/usr/sbin", "/sbin"] {
        let Ok(entries) = std::fs::read_dir(sys) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let text = name.to_string_lossy();
            if NO_RUST.contains(&text.as_ref()) || hide.contains(&text.as_ref()) {
                continue;
            }
            let link = tools.join(&name);
            if !link.exists() && link.symlink_metadata().is_err() {
                std::os::unix::fs::symlink(entry.path(), &link)?;
            }
        }
    }
    Ok(tools)
}

/// Runs `sh install.sh --pubkey PUB SOURCE` for the user whose home is `home`, with `tools`
/// as the whole PATH and a TMPDIR outside the home.
pub fn run_install(
    source: &Path,
    pubkey: &Path,
    home: &Path,
    tools: &Path,
    tmp: &Path,
) -> anyhow::Result<Output> {
    std::fs::create_dir_all(tmp)?;
    Command::new("/bin/sh")
        .arg(workspace_root().join("install.sh"))
        .arg("--pubkey")
        .arg(pubkey)
        .arg(source)
        .env_clear()
        .env("HOME", home)
        .env("PATH", tools)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .output()
        .context("running install.sh")
}

/// Every path under `dir` with what it is (a file's digest, a link's target), to see that a
/// refused install changed nothing.
pub fn snapshot(dir: &Path) -> anyhow::Result<BTreeMap<PathBuf, String>> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) -> anyhow::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let rel = path.strip_prefix(base)?.to_path_buf();
            let kind = entry.file_type()?;
            if kind.is_symlink() {
                out.insert(rel, format!("-> {}", std::fs::read_link(&path)?.display()));
            } else if kind.is_dir() {
                out.insert(rel, "dir".into());
                walk(base, &path, out)?;
            } else {
                out.insert(rel, capt_hook_sign::sha256_hex(&std::fs::read(&path)?));
            }
        }
        Ok(())
    }
    if dir.exists() {
        walk(dir, dir, &mut out)?;
    }
    Ok(out)
}

/// The archive `release` wrote into `dir`, per its manifest.
pub fn archive_of(dir: &Path) -> anyhow::Result<PathBuf> {
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(MANIFEST))?)?;
    let name = manifest["targets"][0]["archive"]
        .as_str()
        .context("the manifest names no archive")?;
    Ok(dir.join(name))
}

/// Flips one bit of the byte in the middle of `file`.
pub fn flip_byte(file: &Path) -> anyhow::Result<()> {
    let mut bytes = std::fs::read(file)?;
    let mid = bytes.len() / 2;
    let byte = bytes.get_mut(mid).context("an empty file")?;
    *byte ^= 0x01;
    std::fs::write(file, bytes)?;
    Ok(())
}

/// `cargo xtask release-e2e --bins DIR`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let bins = match args {
        [flag, dir] if flag == "--bins" => PathBuf::from(dir),
        _ => {
            bail!("usage: cargo xtask release-e2e --bins DIR (the dist binaries, e.g. target/dist)")
        }
    };
    let dir = std::env::temp_dir().join(format!("capt-hook-release-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let result = e2e(&bins, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn e2e(bins: &Path, dir: &Path) -> anyhow::Result<()> {
    let (key_file, pub_file) = test_key_files();
    let key = SigningKey::from_file(&key_file, None)?;
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let rel = dir.join("release");
    release::write_release(&key, bins, &target, &rel)?;
    println!("release signed with the test key in {}", rel.display());

    let tools = tool_path(dir, &[])?;
    let found = Command::new("/bin/sh")
        .args(["-c", "command -v cargo || command -v rustc"])
        .env_clear()
        .env("PATH", &tools)
        .output()?;
    if found.status.success() {
        bail!(
            "a Rust toolchain is on the test PATH: {}",
            String::from_utf8_lossy(&found.stdout)
        );
    }
    let home = dir.join("home");
    std::fs::create_dir_all(&home)?;
    let out = run_install(&rel, &pub_file, &home, &tools, &dir.join("tmp"))?;
    print!("{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        bail!("install.sh failed ({})", out.status);
    }

    // A real event through the installed plugin's `bin/hook` (the native client it links to
    // starts the installed host).
    let plugin_hook = capt_hook_proto::paths::install_dir(&home).join("plugin/bin/hook");
    let project = dir.join("project");
    std::fs::create_dir_all(&project)?;
    let payload = serde_json::json!({
        "session_id": "release-e2e",
        "transcript_path": "/dev/null",
        "cwd": project,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /", "description": "release e2e"},
        "tool_use_id": "toolu_release_e2e",
    });
    let runtime = dir.join("run");
    std::fs::create_dir_all(&runtime)?;
    let user_env = |cmd: &mut Command| {
        cmd.env_clear()
            .env("HOME", &home)
            .env("PATH", &tools)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("TMPDIR", dir.join("tmp"));
    };
    let mut hook = Command::new(&plugin_hook);
    hook.args(["run", "PreToolUse"]);
    user_env(&mut hook);
    let mut child = hook
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {}", plugin_hook.display()))?;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(payload.to_string().as_bytes())?;
    let verdict = child.wait_with_output()?;
    let mut shutdown = Command::new(capt_hook_proto::paths::bin_dir(&home).join("capt-hookd"));
    shutdown.arg("shutdown");
    user_env(&mut shutdown);
    let _ = shutdown.output();
    let stdout = String::from_utf8_lossy(&verdict.stdout);
    println!(
        "`rm -rf /` through the installed plugin: exit {:?} {stdout}",
        verdict.status.code()
    );
    if !(verdict.status.success() && stdout.contains("\"permissionDecision\":\"deny\"")) {
        bail!(
            "the installed hook did not deny `rm -rf /`: exit {:?}, stdout {stdout}, stderr {}",
            verdict.status.code(),
            String::from_utf8_lossy(&verdict.stderr)
        );
    }

    // The installed CLI's `init` points the new file's #:schema line at the installed schema.
    let schema = capt_hook_proto::paths::schema_path(&home);
    let mut init = Command::new(capt_hook_proto::paths::bin_dir(&home).join("capt-hook"));
    init.arg("init").current_dir(&project);
    user_env(&mut init);
    init.env("CLAUDE_PROJECT_DIR", &project);
    let out = init.output()?;
    let scaffold = std::fs::read_to_string(project.join(".claude/hooks/example.toml"))
        .with_context(|| {
            format!(
                "capt-hook init wrote no example.toml: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })?;
    let want = format!("#:schema file://{}", schema.display());
    if !schema.is_file() || scaffold.lines().next() != Some(want.as_str()) {
        bail!(
            "capt-hook init's first line is {:?}, not {want:?} (schema installed: {})",
            scaffold.lines().next(),
            schema.is_file()
        );
    }
    println!("capt-hook init: {want}");

    // One flipped byte in the archive: refused, naming it, and the installed home unchanged.
    let archive = archive_of(&rel)?;
    flip_byte(&archive)?;
    let before = snapshot(&home)?;
    let out = run_install(&rel, &pub_file, &home, &tools, &dir.join("tmp"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stderr}");
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if out.status.success() || !stderr.contains(&format!("{name} was changed")) {
        bail!(
            "install.sh did not refuse the altered {name}: {}",
            out.status
        );
    }
    if snapshot(&home)? != before {
        bail!("a refused install changed the home");
    }
    println!(
        "release-e2e: installed, denied `rm -rf /`, refused a flipped byte leaving HOME unchanged"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        tmp: tempfile::TempDir,
        release: PathBuf,
        public: PathBuf,
    }

    impl Fixture {
        fn new() -> Fixture {
            let tmp = tempfile::tempdir().unwrap();
            let bins = release::tests::fake_bins(tmp.path());
            let (key, public) = test_key_files();
            let key = SigningKey::from_file(&key, None).unwrap();
            let release = tmp.path().join("release");
            release::write_release(&key, &bins, "x86_64-unknown-linux-gnu", &release).unwrap();
            Fixture {
                tmp,
                release,
                public,
            }
        }

        fn path(&self, rel: &str) -> PathBuf {
            self.tmp.path().join(rel)
        }

        /// install.sh into `home` with `hide` left off PATH.
        fn install(&self, home: &str, hide: &[&str]) -> Output {
            let home = self.path(home);
            std::fs::create_dir_all(&home).unwrap();
            let tools = tool_path(&self.path(&format!("tools-{}", hide.join("-"))), hide).unwrap();
            run_install(
                &self.release,
                &self.public,
                &home,
                &tools,
                &self.path("tmp"),
            )
            .unwrap()
        }
    }

    fn stderr(out: &Output) -> String {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn minisign_present() -> bool {
        crate::on_path("minisign")
    }

    /// Installed as `cargo xtask install` lays it out, with either verifier.
    #[test]
    fn install_sh_installs_a_verified_release() {
        let fx = Fixture::new();
        for (home, hide, verifier) in [
            ("home-openssl", &["minisign"][..], "(openssl)"),
            (
                "home-default",
                &[][..],
                if minisign_present() {
                    "(minisign)"
                } else {
                    "(openssl)"
                },
            ),
        ] {
            let out = fx.install(home, hide);
            let err = stderr(&out);
            assert!(out.status.success(), "{home}: {err}");
            assert!(
                err.contains(&format!("signature of SHA256SUMS verified {verifier}")),
                "{err}"
            );
            let share = capt_hook_proto::paths::install_dir(&fx.path(home));
            for bin in release::shipped_bins() {
                let text = std::fs::read_to_string(share.join("bin").join(bin)).unwrap();
                assert!(text.contains(&format!("echo {bin}")), "{bin}");
            }
            assert_eq!(
                std::fs::read_link(share.join("plugin/bin/hook")).unwrap(),
                share.join("bin/hook")
            );
            assert!(share.join("plugin/.claude-plugin/plugin.json").is_file());
            assert!(share.join("sdk/BUILD-ID").is_file());
            // What the host's release check reads releases with, and names to upgrade.
            assert_eq!(
                std::fs::read_to_string(share.join("install.sh")).unwrap(),
                std::fs::read_to_string(workspace_root().join("install.sh")).unwrap()
            );
            let kept = std::fs::read_to_string(share.join("release.pub")).unwrap();
            let trusted = std::fs::read_to_string(&fx.public).unwrap();
            assert_eq!(kept.lines().nth(1), trusted.lines().nth(1), "{kept}");
            let schema =
                std::fs::read_to_string(workspace_root().join("docs/hooks.schema.json")).unwrap();
            for at in [
                capt_hook_proto::paths::schema_path(&fx.path(home)),
                share.join("plugin/hooks.schema.json"),
            ] {
                assert_eq!(
                    std::fs::read_to_string(&at).ok().as_deref(),
                    Some(schema.as_str()),
                    "{}",
                    at.display()
                );
            }
            assert!(err.contains(&format!(
                "/plugin marketplace add {}",
                share.join("plugin").display()
            )));
        }
        // Again over an install: replaced in place, same result.
        let before = snapshot(&fx.path("home-openssl")).unwrap();
        assert!(fx.install("home-openssl", &["minisign"]).status.success());
        assert_eq!(snapshot(&fx.path("home-openssl")).unwrap(), before);
    }

    /// One flipped byte anywhere is refused with the file named, and nothing in HOME changes,
    /// whichever verifier runs.
    #[test]
    fn install_sh_refuses_a_changed_byte_naming_the_file() {
        let fx = Fixture::new();
        assert!(fx.install("home", &["minisign"]).status.success());
        let before = snapshot(&fx.path("home")).unwrap();
        let archive = archive_of(&fx.release).unwrap();
        let archive_name = archive.file_name().unwrap().to_string_lossy().into_owned();
        let pristine = std::fs::read(&archive).unwrap();
        flip_byte(&archive).unwrap();
        for hide in [&["minisign"][..], &[][..]] {
            let out = fx.install("home", hide);
            let err = stderr(&out);
            assert!(!out.status.success(), "{err}");
            assert!(
                err.contains(&format!("{archive_name} was changed")),
                "{err}"
            );
            assert!(err.contains("nothing was installed or changed"), "{err}");
            assert_eq!(snapshot(&fx.path("home")).unwrap(), before, "{err}");
            // Into an empty home: it stays empty.
            let out = fx.install("empty", hide);
            assert!(!out.status.success());
            assert!(snapshot(&fx.path("empty")).unwrap().is_empty());
        }
        std::fs::write(&archive, pristine).unwrap();

        // The digests rewritten to match a changed archive: the signature no longer holds.
        let sums = fx.release.join("SHA256SUMS");
        let text = std::fs::read_to_string(&sums).unwrap();
        flip_byte(&archive).unwrap();
        let digest = capt_hook_sign::sha256_hex(&std::fs::read(&archive).unwrap());
        let forged: String = text
            .lines()
            .map(|l| {
                if l.ends_with(&archive_name) {
                    format!("{digest}  {archive_name}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&sums, forged).unwrap();
        for hide in [&["minisign"][..], &[][..]] {
            let out = fx.install("home", hide);
            let err = stderr(&out);
            assert!(!out.status.success(), "{err}");
            assert!(err.contains("SHA256SUMS.minisig does not verify"), "{err}");
            assert_eq!(snapshot(&fx.path("home")).unwrap(), before);
        }
    }

    /// A release signed by another key, or no trusted key at all, is refused.
    #[test]
    fn install_sh_needs_the_trusted_key() {
        let fx = Fixture::new();
        let other = fx.path("other.pub");
        std::fs::copy(
            workspace_root().join("crates/capt-hook-packs/tests/fixtures/policy/other.pub"),
            &other,
        )
        .unwrap();
        let home = fx.path("home");
        std::fs::create_dir_all(&home).unwrap();
        for hide in [&["minisign"][..], &[][..]] {
            let tools = tool_path(&fx.path("t"), hide).unwrap();
            let out = run_install(&fx.release, &other, &home, &tools, &fx.path("tmp")).unwrap();
            let err = stderr(&out);
            assert!(!out.status.success(), "{err}");
            assert!(err.contains("does not verify"), "{err}");
            assert!(snapshot(&home).unwrap().is_empty());
            std::fs::remove_dir_all(fx.path("t")).unwrap();
        }
        let out = Command::new("/bin/sh")
            .arg(workspace_root().join("install.sh"))
            .arg(&fx.release)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("no trusted release key"),
            "{}",
            stderr(&out)
        );
        assert!(snapshot(&home).unwrap().is_empty());
    }
}
