//! `dist` and `install`: release builds of the shipped binaries (static where the toolchain
//! allows, always position-independent), and a user install of them with the plugin and the SDK.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::pie;
use crate::workspace::{cargo, copy_dir, on_path, run_cargo, target_dir, workspace_root};

/// The binaries the runtime ships.
pub const RUNTIME_BINS: [&str; 3] = ["hook", "capt-hookd", "capt-hook-worker"];

/// Builds the runtime (and the `capt-hook` CLI) in `profile` and returns the binary directory.
pub fn build(release: bool) -> anyhow::Result<PathBuf> {
    let mut args = vec![
        "build",
        "-p",
        "capt-hook-client",
        "-p",
        "capt-hookd",
        "-p",
        "capt-hook-worker",
    ];
    if release {
        args.extend(["-p", "capt-hook-cli", "--release"]);
    }
    run_cargo(&args)?;
    Ok(target_dir()?.join(if release { "release" } else { "debug" }))
}

/// `dist`: release builds of the four binaries, gathered in `<target>/dist/`. They are linked
/// statically in a build of their own ([`static_runtime`]): Claude Code starts the client for
/// every event, and a cold start runs the host and a worker too, so their start-up is on the
/// event's path. Whatever that build could not make comes from the workspace's normal release
/// build, and dist prints which is which. Every binary is position-independent (static-pie when
/// static), so its code is address-randomised; dist fails on one that is not ([`pie::check`]).
pub fn dist() -> anyhow::Result<PathBuf> {
    let target = target_dir()?;
    let statics = static_runtime(&target).unwrap_or_else(|e| {
        eprintln!("xtask: static build failed ({e:#}); shipping dynamic binaries");
        Vec::new()
    });
    let shipped = RUNTIME_BINS.iter().chain(&["capt-hook"]);
    // Only when needed: it is a second full build of the workspace's dependencies.
    let release = if shipped
        .clone()
        .all(|bin| statics.iter().any(|s| s.bin == *bin))
    {
        None
    } else {
        Some(build(true)?)
    };
    let dist = target.join("dist");
    std::fs::create_dir_all(&dist)?;
    let mut placed = Vec::new();
    for bin in shipped {
        let (from, how) = match (statics.iter().find(|s| s.bin == *bin), &release) {
            (Some(s), _) => (s.path.clone(), s.how),
            (None, Some(release)) => (release.join(bin), "dynamic"),
            (None, None) => bail!("{bin} was neither built statically nor in the release build"),
        };
        // Through a new file renamed into place: a host still running from here keeps its
        // file (writing over a running executable fails with "text file busy").
        let tmp = dist.join(format!(".{bin}.new"));
        std::fs::copy(&from, &tmp).with_context(|| format!("copying {}", from.display()))?;
        std::fs::rename(&tmp, dist.join(bin))?;
        let size = std::fs::metadata(dist.join(bin))?.len();
        println!(
            "{:<60} {:>6} KiB  {how}",
            dist.join(bin).display(),
            size / 1024
        );
        placed.push(dist.join(bin));
    }
    pie::check(&placed)?;
    Ok(dist)
}

/// A binary `dist` takes from a static build instead of the workspace's release build.
pub struct StaticBin {
    bin: &'static str,
    path: PathBuf,
    /// How it was linked, printed by `dist`.
    how: &'static str,
}

/// Packages and the binary each gives, built by one cargo run.
pub type Group = &'static [(&'static str, &'static str)];

/// How this machine builds static executables: the Rust target, the flags beside `RUSTFLAGS`,
/// and a musl C compiler for the crates that compile C (tree-sitter's grammars, SQLite).
pub struct StaticToolchain {
    /// musl's target when installed, else the glibc host's (then linked with `crt-static`).
    triple: String,
    musl_cc: Option<String>,
}

impl StaticToolchain {
    /// With musl when its Rust target is installed (`rustup target add
    /// x86_64-unknown-linux-musl`): glibc's start-up asks the CPU about its caches with `cpuid`,
    /// which a virtual machine traps, and that was a third of the client's CPU time under load;
    /// musl's start-up does nothing of the kind (client 0.14 vs 0.42 ms of CPU per run, measured
    /// in issue 15's note). Without it, glibc's `crt-static`.
    pub(crate) fn detect() -> anyhow::Result<StaticToolchain> {
        let host = Command::new("rustc").arg("-vV").output()?;
        let host = String::from_utf8_lossy(&host.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
            .context("rustc -vV names no host")?;
        let Some(arch) = host.strip_suffix("-unknown-linux-gnu") else {
            bail!("static binaries are only built on linux-gnu hosts, not {host}");
        };
        let musl = format!("{arch}-unknown-linux-musl");
        if !target_installed(&musl) {
            return Ok(StaticToolchain {
                triple: host,
                musl_cc: None,
            });
        }
        let musl_cc = [format!("{arch}-linux-musl-gcc"), "musl-gcc".to_owned()]
            .into_iter()
            .find(|cc| on_path(cc));
        Ok(StaticToolchain {
            triple: musl,
            musl_cc,
        })
    }

    /// The musl C compiler found, if any.
    pub(crate) fn musl_cc(&self) -> Option<&str> {
        self.musl_cc.as_deref()
    }

    /// How the binaries are linked, as `dist` prints it.
    pub(crate) fn how(&self) -> &'static str {
        if self.is_musl() {
            "static (musl)"
        } else {
            "static (glibc)"
        }
    }

    fn is_musl(&self) -> bool {
        self.triple.ends_with("-musl")
    }

    /// Whether the worker and the CLI are built this way: they compile C, which needs musl's
    /// own compiler (C built against glibc's headers does not link with musl); glibc's
    /// `crt-static` is not used for them (a static glibc loads NSS modules at run time).
    pub(crate) fn builds_worker(&self) -> bool {
        self.is_musl() && self.musl_cc.is_some()
    }

    /// `cargo <subcommand> <args>` building for this toolchain, in a target directory of its own
    /// under `target`. `--target` keeps the flags off build scripts and proc macros. The
    /// executables are static-pie: rustc's default relocation model for these targets with
    /// `crt-static`, so their code is address-randomised like a dynamic PIE's (the start-up
    /// applies their relative relocations itself; no loader runs).
    pub(crate) fn cargo(&self, target: &Path, subcommand: &str, args: &[&str]) -> Command {
        // musl links statically by default; glibc is asked to.
        let crt = if self.is_musl() {
            ""
        } else {
            "-C target-feature=+crt-static"
        };
        let flags = format!("{} {crt}", std::env::var("RUSTFLAGS").unwrap_or_default());
        let mut cmd = Command::new(cargo());
        // Before `args`, which may end in `-- <the program's arguments>`.
        cmd.args([subcommand, "--target", &self.triple])
            .args(args)
            .env("RUSTFLAGS", flags.trim())
            .env("CARGO_TARGET_DIR", Self::target_dir(target))
            .current_dir(workspace_root());
        if let Some(cc) = &self.musl_cc {
            // The `cc` crate's variable for this target.
            cmd.env(format!("CC_{}", self.triple.replace('-', "_")), cc);
        }
        cmd
    }

    /// The target directory of [`StaticToolchain::cargo`]'s builds.
    fn target_dir(target: &Path) -> PathBuf {
        target.join("static-runtime")
    }

    /// Where [`StaticToolchain::cargo`] puts release binaries.
    fn release_dir(&self, target: &Path) -> PathBuf {
        Self::target_dir(target).join(&self.triple).join("release")
    }
}

/// Builds the shipped binaries as static executables ([`StaticToolchain`]). The worker and the
/// CLI compile C, so they join only when a musl C compiler is there too (`musl-gcc`, from
/// `musl-tools`); a dynamic worker's loader and libraries cost a cold start ~1.1 ms more.
/// Without the musl target, the client alone with glibc's `crt-static`.
pub fn static_runtime(target: &Path) -> anyhow::Result<Vec<StaticBin>> {
    let toolchain = StaticToolchain::detect()?;
    // (package, binary) pairs built this way, one cargo run per group: a run unifies its
    // packages' dependency features, and the client and the host are kept free of the
    // worker's and the CLI's.
    const RUNTIME: Group = &[("capt-hook-client", "hook"), ("capt-hookd", "capt-hookd")];
    const ENGINE: Group = &[
        ("capt-hook-worker", "capt-hook-worker"),
        ("capt-hook-cli", "capt-hook"),
    ];
    let groups: &[Group] = if !toolchain.is_musl() {
        eprintln!(
            "xtask: the musl target is not installed; the client is linked with glibc's \
             crt-static, whose start-up costs more (rustup target add {}-unknown-linux-musl)",
            std::env::consts::ARCH
        );
        &[&[("capt-hook-client", "hook")]]
    } else if toolchain.builds_worker() {
        &[RUNTIME, ENGINE]
    } else {
        eprintln!(
            "xtask: no musl C compiler (musl-gcc, from musl-tools); the worker and the \
             CLI, which compile C, are linked dynamically, and a cold start costs more"
        );
        &[RUNTIME]
    };
    let out = toolchain.release_dir(target);
    let mut built = Vec::new();
    for group in groups {
        let mut args = vec!["--release"];
        for (package, _) in *group {
            args.extend(["-p", package]);
        }
        let status = toolchain.cargo(target, "build", &args).status()?;
        if !status.success() {
            // Only this group's binaries ship dynamic; those built already stay static.
            eprintln!(
                "xtask: cargo build {} failed ({status}); those binaries ship dynamic",
                args.join(" ")
            );
            continue;
        }
        built.extend(group.iter().map(|&(_, bin)| StaticBin {
            bin,
            path: out.join(bin),
            how: toolchain.how(),
        }));
    }
    Ok(built)
}

/// Whether rustup has the standard library for `triple`.
pub fn target_installed(triple: &str) -> bool {
    Command::new("rustc")
        .args(["--print", "target-libdir", "--target", triple])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .and_then(|dir| std::fs::read_dir(dir).ok())
        // rustup names the library with a hash: `libstd-<hash>.rlib`.
        .is_some_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("libstd-") && name.ends_with(".rlib")
            })
        })
}

/// `install [--service]`: the binaries into `~/.local/share/captain-hook/bin/`, the plugin
/// beside them; with `--service`, the host as a systemd user unit or launchd agent.
pub fn install(args: &[String]) -> anyhow::Result<()> {
    let service = match args {
        [] => false,
        [flag] if flag == "--service" => true,
        other => bail!("unknown arguments {other:?}; usage: cargo xtask install [--service]"),
    };
    let home = PathBuf::from(std::env::var("HOME").context("HOME is not set")?);
    let plugin = install_into(&home)?;
    println!(
        "installed {} and the plugin at {}",
        installed_bin_dir(&home).display(),
        plugin.display()
    );
    println!("enable it in Claude Code:");
    println!("  /plugin marketplace add {}", plugin.display());
    println!("  /plugin install captain-hook@captain-hook");
    println!(
        "then remove any `capt-hook run` entries from .claude/settings*.json (they would run twice)"
    );
    if service {
        install_service(&installed_bin_dir(&home))?;
    }
    Ok(())
}

/// Runs the installed `capt-hook helper install`, which owns the service definitions, against
/// the installed host.
pub fn install_service(bin: &Path) -> anyhow::Result<()> {
    let status = Command::new(bin.join("capt-hook"))
        .args(["helper", "install", "--host"])
        .arg(bin.join("capt-hookd"))
        .status()
        .context("running capt-hook helper install")?;
    if !status.success() {
        bail!("capt-hook helper install failed ({status})");
    }
    Ok(())
}

/// Where `install` puts the binaries for the user whose home is `home`.
pub fn installed_bin_dir(home: &Path) -> PathBuf {
    capt_hook_proto::paths::bin_dir(home)
}

/// Builds and installs the runtime and the plugin for the user whose home is `home`; returns
/// the installed plugin's directory.
pub fn install_into(home: &Path) -> anyhow::Result<PathBuf> {
    install_from(&dist()?, home)
}

/// Installs the binaries already built in `dir` and the plugin for the user whose home is
/// `home`; returns the installed plugin's directory.
pub fn install_from(dir: &Path, home: &Path) -> anyhow::Result<PathBuf> {
    let bin = installed_bin_dir(home);
    let share = bin.parent().context("bin dir has a parent")?.to_path_buf();
    std::fs::create_dir_all(&bin)?;
    // A host from an older build would refuse this build's clients: stop it first (it drains),
    // and the first event starts the new one.
    let old_host = bin.join("capt-hookd");
    if old_host.exists() {
        let _ = Command::new(&old_host).arg("shutdown").status();
    }
    for name in RUNTIME_BINS.iter().chain(&["capt-hook"]) {
        // Copy to a temp name and rename, so a running client is never overwritten in place.
        let tmp = bin.join(format!(".{name}.new"));
        std::fs::copy(dir.join(name), &tmp).with_context(|| format!("copying {name}"))?;
        std::fs::rename(&tmp, bin.join(name))?;
    }
    install_sdk(&share.join("sdk"))?;
    let plugin = share.join("plugin");
    if plugin.exists() {
        std::fs::remove_dir_all(&plugin)?;
    }
    copy_dir(&workspace_root().join("plugin"), &plugin)?;
    write_schema(&share, &plugin)?;
    // The installer a release check's notice names (an install from a checkout keeps no
    // release key: the check needs CAPT_HOOK_RELEASE_PUBKEY then).
    let script = share.join("install.sh");
    std::fs::copy(workspace_root().join("install.sh"), &script)
        .with_context(|| format!("writing {}", script.display()))?;
    link_native_client(&plugin, &bin)?;
    Ok(plugin)
}

/// Writes the hooks files' JSON Schema (`docs/hooks.schema.json`, which a test keeps equal to
/// `capt-hook schema`) into the install directory `share`, where `capt-hook init`'s
/// `#:schema` line points, and into the plugin directory `plugin`, so a plugin installed on its
/// own carries it too.
pub fn write_schema(share: &Path, plugin: &Path) -> anyhow::Result<()> {
    let name = capt_hook_proto::paths::SCHEMA_NAME;
    let from = workspace_root().join("docs").join(name);
    for to in [share.join(name), plugin.join(name)] {
        let tmp = to.with_extension("json.new");
        std::fs::copy(&from, &tmp)
            .with_context(|| format!("copying {} to {}", from.display(), tmp.display()))?;
        std::fs::rename(&tmp, &to).with_context(|| format!("writing {}", to.display()))?;
    }
    Ok(())
}

/// The library crates a Rust hook project builds against (the SDK and what it depends on).
pub const SDK_CRATES: &[&str] = &[
    "captain-hook",
    "capt-hook-agents",
    "capt-hook-rust-project",
    "capt-hook-code",
    "capt-hook-core",
    "capt-hook-engine",
    "capt-hook-journal",
    "capt-hook-kinds",
    "capt-hook-llm",
    "capt-hook-packs",
    "capt-hook-proto",
    "capt-hook-serve",
    "capt-hook-shell",
    "capt-hook-state",
    "capt-hook-testing",
    "capt-hook-toml",
    "capt-hook-transcript",
];

/// Installs the SDK's source at `sdk` so `capt-hook init --rust` projects build offline: the
/// library crates, a workspace manifest listing only them (their manifests inherit from it),
/// the lock file (the versions this install already built), and `BUILD-ID`, a hash of it all
/// that every project build is keyed by.
pub fn install_sdk(sdk: &Path) -> anyhow::Result<()> {
    let tmp = sdk.with_extension("new");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    let root = workspace_root();
    let mut hash = blake3::Hasher::new();
    for name in SDK_CRATES {
        let from = root.join("crates").join(name);
        // `packs` holds the builtin packs the SDK compiles in (`include_str!`).
        for sub in ["Cargo.toml", "src", "build.rs", "packs"] {
            let path = from.join(sub);
            let to = tmp.join("crates").join(name).join(sub);
            if path.is_dir() {
                copy_dir(&path, &to)?;
            } else if path.is_file() {
                std::fs::create_dir_all(to.parent().context("a parent")?)?;
                std::fs::copy(&path, &to)?;
            }
        }
    }
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))?;
    let members: String = SDK_CRATES
        .iter()
        .map(|c| format!("    \"crates/{c}\",\n"))
        .collect();
    let start = manifest.find("members = [").context("a members list")?;
    let end = start + manifest[start..].find(']').context("the end of members")?;
    let manifest = format!(
        "{}members = [\n{members}{}",
        &manifest[..start],
        &manifest[end..]
    );
    std::fs::write(tmp.join("Cargo.toml"), manifest)?;
    std::fs::copy(root.join("Cargo.lock"), tmp.join("Cargo.lock"))?;
    hash_dir(&tmp, &tmp, &mut hash)?;
    std::fs::write(tmp.join("BUILD-ID"), &hash.finalize().to_hex()[..32])?;
    if sdk.exists() {
        std::fs::remove_dir_all(sdk)?;
    }
    std::fs::rename(&tmp, sdk)?;
    Ok(())
}

/// Feeds every file under `dir` (sorted, path and bytes) to `hash`.
pub fn hash_dir(base: &Path, dir: &Path, hash: &mut blake3::Hasher) -> anyhow::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if e.file_type()?.is_dir() {
            hash_dir(base, &path, hash)?;
        } else {
            hash.update(path.strip_prefix(base)?.to_string_lossy().as_bytes());
            hash.update(&std::fs::read(&path)?);
        }
    }
    Ok(())
}

/// Points the installed plugin's `bin/hook` at the native client, so what Claude Code runs is
/// one exec rather than a shell script that execs the client (a shell's start-up costs as much
/// as the whole round trip to the host). The client finds the host and the worker beside its
/// resolved path, so a symlink keeps them found.
pub fn link_native_client(plugin: &Path, bin: &Path) -> anyhow::Result<()> {
    let shim = plugin.join("bin/hook");
    std::fs::remove_file(&shim).with_context(|| format!("removing {}", shim.display()))?;
    std::os::unix::fs::symlink(bin.join("hook"), &shim)
        .with_context(|| format!("linking {} to the client", shim.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers;

    /// The installed SDK is a workspace cargo can read on its own: its members are the SDK's
    /// crates, their inherited settings resolve, and `BUILD-ID` names the copy.
    #[test]
    fn installed_sdk_is_a_workspace_of_the_library_crates() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = dir.path().join("sdk");
        install_sdk(&sdk).unwrap();
        let id = std::fs::read_to_string(sdk.join("BUILD-ID")).unwrap();
        assert_eq!(id.len(), 32, "{id}");
        assert!(
            sdk.join("crates/capt-hook-packs/packs/general/hooks/commands.toml")
                .is_file(),
            "the builtin packs the SDK compiles in are shipped with it"
        );
        let meta = layers::metadata(&sdk.join("Cargo.toml"));
        let mut names: Vec<&str> = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        names.sort_unstable();
        let mut want = SDK_CRATES.to_vec();
        want.sort_unstable();
        assert_eq!(names, want);
        // A second install replaces the first whole.
        install_sdk(&sdk).unwrap();
        assert_eq!(std::fs::read_to_string(sdk.join("BUILD-ID")).unwrap(), id);
    }
}
