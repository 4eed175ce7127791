//! `cargo xtask release [--key FILE] [--out DIR] [--bins DIR] [--target TRIPLE]
//! [--prebuilt-sdk]`: what a user installs without Rust, signed.
//!
//! ```text
//! <out>/
//!   captain-hook-<version>-<target>.tar.gz       captain-hook-<version>-<target>/
//!                                                  bin/      hook capt-hookd capt-hook-worker capt-hook
//!                                                  plugin/   the Claude Code plugin (bin/hook the sh wrapper)
//!                                                  sdk/      the SDK's source, as `cargo xtask install` lays it
//!                                                    prebuilt/ with --prebuilt-sdk: its registry dependencies,
//!                                                              built as `capt-hook build` builds them
//!                                                  hooks.schema.json  the hooks files' schema
//!                                                  install.sh  the installer, kept by the install
//!   captain-hook-<version>-<target>.tar.gz.sig   minisign signature of the archive (cargo binstall)
//!   manifest.json                                version, targets, each archive's digest and files
//!   binstall.toml                                `[package.metadata.binstall]`, from the manifest
//!   captain-hook.rb                              a Homebrew formula template, from the manifest
//!   SHA256SUMS                                   every file above
//!   SHA256SUMS.minisig                           minisign signature of SHA256SUMS
//! ```
//!
//! The binaries are the `dist` set (a release build) unless `--bins` names a directory holding
//! them (tests pass debug builds; CI passes `target/dist` after its dist step). The key is a
//! minisign secret key file (`--key`, else `$CAPT_HOOK_RELEASE_KEY`); an encrypted one takes
//! its password from `$CAPT_HOOK_SIGNING_PASSWORD`. `install.sh` at the repository root
//! verifies and installs the result.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use capt_hook_sign::{SIGNATURE, SUMS, SigningKey};
use serde_json::json;

use crate::dist::{RUNTIME_BINS, install_sdk};
use crate::workspace::workspace_root;

/// The version every archive and the manifest carry: the workspace's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The variable naming the signing key when `--key` is not given.
pub const KEY_VAR: &str = "CAPT_HOOK_RELEASE_KEY";
/// The release manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// Where releases are downloaded from: the repository's release for the tag `v<version>`.
const REPOSITORY: &str = "https://github.com/captain-hook-rs/captain-hook";

/// The binaries an archive's `bin/` holds: the runtime and the CLI.
pub fn shipped_bins() -> impl Iterator<Item = &'static str> {
    RUNTIME_BINS.into_iter().chain(["capt-hook"])
}

/// `cargo xtask release` with its arguments.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    const USAGE: &str = "usage: cargo xtask release [--key FILE] [--out DIR] [--bins DIR] [--target TRIPLE] [--prebuilt-sdk]";
    let mut opts = Options::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("{flag} needs a value; {USAGE}"))
        };
        match a.as_str() {
            "--key" => opts.key = Some(PathBuf::from(value("--key")?)),
            "--out" => opts.out = Some(PathBuf::from(value("--out")?)),
            "--bins" => opts.bins = Some(PathBuf::from(value("--bins")?)),
            "--target" => opts.target = Some(value("--target")?),
            "--prebuilt-sdk" => opts.prebuilt_sdk = true,
            other => bail!("unknown argument {other:?}; {USAGE}"),
        }
    }
    let release = release(&opts)?;
    println!("release {VERSION} in {}", release.dir.display());
    for file in &release.files {
        println!("  {file}");
    }
    println!("signed by minisign key {}; verify with:", release.key_id);
    println!(
        "  minisign -Vm {} -P {}",
        release.dir.join(SUMS).display(),
        release.public_key
    );
    Ok(())
}

/// What `release` is given.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// The minisign secret key file.
    pub key: Option<PathBuf>,
    /// Where the release is written (replaced whole).
    pub out: Option<PathBuf>,
    /// A directory holding the binaries, instead of a `dist` build.
    pub bins: Option<PathBuf>,
    /// The target the binaries are for, instead of rustc's host.
    pub target: Option<String>,
    /// Ship the SDK's registry dependencies prebuilt (a release build of them: minutes).
    pub prebuilt_sdk: bool,
}

/// What `release` wrote.
#[derive(Debug)]
pub struct Release {
    /// The release directory.
    pub dir: PathBuf,
    /// Its files, sorted (SHA256SUMS and its signature last).
    pub files: Vec<String>,
    /// The signing key's id.
    pub key_id: String,
    /// The signing key's public half (base64, as `minisign -P` takes it).
    pub public_key: String,
}

/// Builds, packs and signs a release as [`Options`] say.
pub fn release(opts: &Options) -> anyhow::Result<Release> {
    let key_path = match &opts.key {
        Some(k) => k.clone(),
        None => std::env::var_os(KEY_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .with_context(|| {
                format!(
                    "no signing key: pass --key FILE (a minisign secret key) or set {KEY_VAR}; \
                     tests/fixtures/release-key/test.key signs a test release"
                )
            })?,
    };
    let password = std::env::var(capt_hook_sign::PASSWORD_VAR)
        .ok()
        .filter(|p| !p.is_empty());
    // The key first: a bad key should not cost a release build.
    let key = SigningKey::from_file(&key_path, password)?;
    let target = match &opts.target {
        Some(t) => t.clone(),
        None => host_triple()?,
    };
    let bins = match &opts.bins {
        Some(b) => b.clone(),
        None => crate::dist()?,
    };
    let out = match &opts.out {
        Some(o) => o.clone(),
        None => crate::target_dir()?.join("releases").join(VERSION),
    };
    write_release_with(&key, &bins, &target, &out, opts.prebuilt_sdk)
}

/// The triple rustc builds for by default.
fn host_triple() -> anyhow::Result<String> {
    let out = std::process::Command::new("rustc").arg("-vV").output()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .context("rustc -vV names no host")
}

/// The archive's name (and its top directory's, without `.tar.gz`) for `target`.
pub fn archive_stem(target: &str) -> String {
    format!("captain-hook-{VERSION}-{target}")
}

/// Writes the release for the binaries in `bins` (built for `target`) into `out`, signed
/// with `key`. `out` is made anew: it must not exist, be empty, or hold an earlier release.
pub fn write_release(
    key: &SigningKey,
    bins: &Path,
    target: &str,
    out: &Path,
) -> anyhow::Result<Release> {
    write_release_with(key, bins, target, out, false)
}

/// [`write_release`], with the SDK's prebuilt dependencies when `prebuilt` (built by the
/// release's own `capt-hook`, so `bins` must be real binaries for the machine running this).
pub fn write_release_with(
    key: &SigningKey,
    bins: &Path,
    target: &str,
    out: &Path,
    prebuilt: bool,
) -> anyhow::Result<Release> {
    if target.is_empty()
        || !target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        bail!("target {target:?} is not a target triple");
    }
    prepare_out(out)?;
    let stem = archive_stem(target);
    let stage = out.join(format!(".stage-{stem}"));
    let top = stage.join(&stem);
    std::fs::create_dir_all(top.join("bin"))?;
    for bin in shipped_bins() {
        let from = bins.join(bin);
        let to = top.join("bin").join(bin);
        std::fs::copy(&from, &to)
            .with_context(|| format!("copying {} (is --bins right?)", from.display()))?;
        set_mode(&to, 0o755)?;
    }
    crate::copy_dir(&workspace_root().join("plugin"), &top.join("plugin"))?;
    crate::dist::write_schema(&top, &top.join("plugin"))?;
    // install.sh installs its own copy from here, verified with the archive, so the host's
    // release check can name a script the user already trusts.
    let script = top.join("install.sh");
    std::fs::copy(workspace_root().join("install.sh"), &script)?;
    set_mode(&script, 0o755)?;
    install_sdk(&top.join("sdk"))?;
    if prebuilt {
        let work = out.join(format!(".prebuilt-{stem}"));
        let files = crate::prebuilt::build_prebuilt(bins, &top.join("sdk"), &work)?;
        std::fs::remove_dir_all(&work)?;
        println!("sdk/prebuilt: {files} files of the SDK's registry dependencies");
    }

    let archive_name = format!("{stem}.tar.gz");
    let (archive, files) = pack(&stage, &stem)?;
    std::fs::remove_dir_all(&stage)?;
    std::fs::write(out.join(&archive_name), &archive)?;
    // cargo binstall checks one signature per archive (`{ url }.sig`).
    let archive_sig = format!("{archive_name}.sig");
    let comment = format!("captain-hook {VERSION} {archive_name}");
    std::fs::write(out.join(&archive_sig), key.sign(&archive, &comment)?)?;

    let public_key = key
        .public_key_file()
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let manifest = json!({
        "name": "captain-hook",
        "version": VERSION,
        "repository": REPOSITORY,
        "download": download_base(),
        "signing_key": { "id": key.key_id(), "minisign": public_key },
        "binaries": shipped_bins().collect::<Vec<_>>(),
        "targets": [{
            "target": target,
            "archive": archive_name,
            "sha256": capt_hook_sign::sha256_hex(&archive),
            "size": archive.len(),
            "signature": archive_sig,
            "files": files,
        }],
    });
    let manifest_text = serde_json::to_string_pretty(&manifest)? + "\n";
    std::fs::write(out.join(MANIFEST), &manifest_text)?;
    std::fs::write(out.join("binstall.toml"), binstall(&manifest)?)?;
    std::fs::write(out.join("captain-hook.rb"), homebrew(&manifest)?)?;

    // SHA256SUMS covers every file but itself and its signature.
    let mut names: Vec<String> = std::fs::read_dir(out)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.retain(|n| n != SUMS && n != SIGNATURE);
    names.sort();
    let contents = names
        .iter()
        .map(|n| Ok((n.as_str(), std::fs::read(out.join(n))?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let sums = capt_hook_sign::sums(contents.iter().map(|(n, b)| (*n, b.as_slice())));
    std::fs::write(out.join(SUMS), &sums)?;
    let signature = key.sign(sums.as_bytes(), &format!("captain-hook {VERSION} {SUMS}"))?;
    std::fs::write(out.join(SIGNATURE), signature)?;
    names.extend([SUMS.to_owned(), SIGNATURE.to_owned()]);
    Ok(Release {
        dir: out.to_path_buf(),
        files: names,
        key_id: key.key_id(),
        public_key,
    })
}

/// Makes `out` an empty directory: it may not exist, be empty, or hold an earlier release
/// (it has a `SHA256SUMS`), which is removed; anything else is refused, so a mistyped `--out`
/// never deletes a directory of the user's.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .with_context(|| format!("reading {}", out.display()))?
            .next()
            .is_none();
        if !empty {
            if !out.join(SUMS).is_file() {
                bail!(
                    "{} is neither empty nor an earlier release (no {SUMS}): choose another --out",
                    out.display()
                );
            }
            std::fs::remove_dir_all(out)?;
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {}", path.display()))
}

/// The tar.gz of `stage/<top>`, entries sorted, owner root and a fixed time, so the same tree
/// always packs to the same bytes; and the manifest's list of its files.
fn pack(stage: &Path, top: &str) -> anyhow::Result<(Vec<u8>, Vec<serde_json::Value>)> {
    let mut entries = Vec::new();
    walk(stage, &stage.join(top), &mut entries)?;
    entries.sort();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut files = Vec::new();
    for (rel, is_dir) in &entries {
        let path = stage.join(rel);
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        if *is_dir {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            tar.append_data(&mut header, format!("{rel}/"), std::io::empty())?;
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let mode = if is_executable(&path)? { 0o755 } else { 0o644 };
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(mode);
        header.set_size(bytes.len() as u64);
        tar.append_data(&mut header, rel, bytes.as_slice())?;
        files.push(json!({
            "path": rel,
            "sha256": capt_hook_sign::sha256_hex(&bytes),
            "mode": format!("{mode:o}"),
        }));
    }
    let mut gz = tar.into_inner()?;
    gz.flush()?;
    Ok((gz.finish()?, files))
}

/// Every directory and file under `dir`, relative to `base` and `/`-separated. A symlink is
/// refused: an archive of ours holds none, and following one would pack what it points at.
fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, bool)>) -> anyhow::Result<()> {
    let rel = |p: &Path| -> anyhow::Result<String> {
        Ok(p.strip_prefix(base)?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"))
    };
    out.push((rel(dir)?, true));
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            bail!(
                "{} is a symlink; a release archive holds none",
                path.display()
            );
        } else if kind.is_dir() {
            walk(base, &path, out)?;
        } else {
            out.push((rel(&path)?, false));
        }
    }
    Ok(())
}

fn is_executable(path: &Path) -> anyhow::Result<bool> {
    use std::os::unix::fs::PermissionsExt as _;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o111 != 0)
}

/// Where this version's files are published.
fn download_base() -> String {
    format!("{REPOSITORY}/releases/download/v{VERSION}")
}

/// A field of the manifest that must be a string.
fn field<'a>(v: &'a serde_json::Value, name: &str) -> anyhow::Result<&'a str> {
    v[name]
        .as_str()
        .with_context(|| format!("{MANIFEST}: `{name}` is not a string"))
}

/// `[package.metadata.binstall]` for the crate that ships `capt-hook` (capt-hook-cli), from
/// the manifest: where the archive is, where the binaries are in it, and the minisign key
/// that signed each archive (`<archive>.sig`).
pub fn binstall(manifest: &serde_json::Value) -> anyhow::Result<String> {
    let download = field(manifest, "download")?;
    let pubkey = field(&manifest["signing_key"], "minisign")?;
    let targets: Vec<&str> = manifest["targets"]
        .as_array()
        .context("manifest has no targets")?
        .iter()
        .map(|t| field(t, "target"))
        .collect::<anyhow::Result<_>>()?;
    Ok(format!(
        "# cargo binstall metadata for captain-hook {version}, written by `cargo xtask release`\n\
         # from {MANIFEST}. Paste it into capt-hook-cli's Cargo.toml. Targets in this release:\n\
         # {targets}.\n\
         [package.metadata.binstall]\n\
         pkg-url = \"{download}/captain-hook-{{ version }}-{{ target }}.tar.gz\"\n\
         bin-dir = \"captain-hook-{{ version }}-{{ target }}/bin/{{ bin }}{{ binary-ext }}\"\n\
         pkg-fmt = \"tgz\"\n\n\
         [package.metadata.binstall.signing]\n\
         algorithm = \"minisign\"\n\
         pubkey = \"{pubkey}\"\n",
        version = field(manifest, "version")?,
        targets = targets.join(", "),
    ))
}

/// A Homebrew formula template from the manifest: one `url`/`sha256` per target the release
/// has (macOS and Linux, Intel and Arm); targets it lacks are absent, and the formula says so.
pub fn homebrew(manifest: &serde_json::Value) -> anyhow::Result<String> {
    let version = field(manifest, "version")?;
    let download = field(manifest, "download")?;
    let mut blocks = String::new();
    for (os, os_block) in [("apple-darwin", "on_macos"), ("linux", "on_linux")] {
        let mut inner = String::new();
        for (arch, arch_block) in [("x86_64", "on_intel"), ("aarch64", "on_arm")] {
            let found = manifest["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|t| {
                    t["target"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(&format!("{arch}-")) && t.contains(os))
                });
            if let Some(t) = found {
                inner.push_str(&format!(
                    "    {arch_block} do\n      url \"{download}/{}\"\n      sha256 \"{}\"\n    end\n",
                    field(t, "archive")?,
                    field(t, "sha256")?
                ));
            }
        }
        if !inner.is_empty() {
            blocks.push_str(&format!("  {os_block} do\n{inner}  end\n"));
        }
    }
    if blocks.is_empty() {
        bail!("{MANIFEST} has no target Homebrew installs (macOS or Linux, x86_64 or aarch64)");
    }
    Ok(format!(
        "# Homebrew formula template for captain-hook {version}, written by `cargo xtask release`\n\
         # from {MANIFEST}; only the targets that release holds are listed.\n\
         class CaptainHook < Formula\n\
         \x20 desc \"Hooks framework for Claude Code and other coding agents\"\n\
         \x20 homepage \"{repo}\"\n\
         \x20 version \"{version}\"\n\
         \x20 license \"MIT\"\n\n\
         {blocks}\n\
         \x20 def install\n\
         \x20   # Kept together: the client finds the host and the worker beside it.\n\
         \x20   libexec.install \"bin\", \"plugin\", \"sdk\"\n\
         \x20   bin.install_symlink libexec/\"bin/capt-hook\", libexec/\"bin/capt-hookd\"\n\
         \x20 end\n\n\
         \x20 def caveats\n\
         \x20   <<~EOS\n\
         \x20     Enable the plugin in Claude Code:\n\
         \x20       /plugin marketplace add #{{opt_libexec}}/plugin\n\
         \x20       /plugin install captain-hook@captain-hook\n\
         \x20   EOS\n\
         \x20 end\n\n\
         \x20 test do\n\
         \x20   system bin/\"capt-hook\", \"--version\"\n\
         \x20 end\n\
         end\n",
        repo = field(manifest, "repository")?,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The vendored test key.
    pub(crate) fn test_key() -> SigningKey {
        SigningKey::from_file(
            &workspace_root().join("tests/fixtures/release-key/test.key"),
            None,
        )
        .unwrap()
    }

    /// Stand-ins for the binaries: what install.sh does with them does not depend on what they are.
    pub(crate) fn fake_bins(dir: &Path) -> PathBuf {
        let bins = dir.join("bins");
        std::fs::create_dir_all(&bins).unwrap();
        for bin in shipped_bins() {
            std::fs::write(bins.join(bin), format!("#!/bin/sh\necho {bin} \"$@\"\n")).unwrap();
            set_mode(&bins.join(bin), 0o755).unwrap();
        }
        bins
    }

    pub(crate) const TARGET: &str = "x86_64-unknown-linux-musl";

    #[test]
    fn a_release_is_signed_and_every_file_is_summed() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("release");
        let key = test_key();
        let release = write_release(&key, &fake_bins(tmp.path()), TARGET, &out).unwrap();
        let archive = format!("captain-hook-{VERSION}-{TARGET}.tar.gz");
        assert_eq!(
            release.files,
            [
                "binstall.toml".into(),
                archive.clone(),
                format!("{archive}.sig"),
                "captain-hook.rb".into(),
                MANIFEST.into(),
                SUMS.into(),
                SIGNATURE.into()
            ]
        );
        // The signature verifies with the public key the way the runtime checks signatures.
        let sums = std::fs::read(out.join(SUMS)).unwrap();
        let pk = minisign_verify::PublicKey::from_base64(&release.public_key).unwrap();
        let sig = std::fs::read_to_string(out.join(SIGNATURE)).unwrap();
        pk.verify(
            &sums,
            &minisign_verify::Signature::decode(&sig).unwrap(),
            false,
        )
        .unwrap();
        let archive_bytes = std::fs::read(out.join(&archive)).unwrap();
        let sig = std::fs::read_to_string(out.join(format!("{archive}.sig"))).unwrap();
        pk.verify(
            &archive_bytes,
            &minisign_verify::Signature::decode(&sig).unwrap(),
            false,
        )
        .unwrap();
        // Every other file is in SHA256SUMS with its digest.
        let sums = String::from_utf8(sums).unwrap();
        for name in &release.files[..5] {
            let digest = capt_hook_sign::sha256_hex(&std::fs::read(out.join(name)).unwrap());
            assert!(
                sums.contains(&format!("{digest}  {name}\n")),
                "{name}: {sums}"
            );
        }
        // The manifest names the archive, its digest and its files; the archive holds them.
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(MANIFEST)).unwrap()).unwrap();
        let t = &manifest["targets"][0];
        assert_eq!(t["archive"], archive.as_str());
        assert_eq!(t["sha256"], capt_hook_sign::sha256_hex(&archive_bytes));
        let paths: Vec<&str> = t["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap())
            .collect();
        let stem = archive_stem(TARGET);
        for want in [
            format!("{stem}/bin/hook"),
            format!("{stem}/bin/capt-hook"),
            format!("{stem}/plugin/.claude-plugin/plugin.json"),
            format!("{stem}/plugin/bin/hook"),
            format!("{stem}/sdk/BUILD-ID"),
            format!("{stem}/sdk/crates/capt-hook-packs/packs/general/hooks/commands.toml"),
        ] {
            assert!(paths.contains(&want.as_str()), "{want} not in the archive");
        }
        let mut unpacked = tar::Archive::new(flate2::read::GzDecoder::new(&archive_bytes[..]));
        let listed = unpacked
            .entries()
            .unwrap()
            .filter(|e| e.as_ref().unwrap().header().entry_type().is_file())
            .count();
        assert_eq!(listed, paths.len());
        // The same inputs pack to the same archive.
        let again = tmp.path().join("again");
        write_release(&key, &fake_bins(tmp.path()), TARGET, &again).unwrap();
        assert_eq!(std::fs::read(again.join(&archive)).unwrap(), archive_bytes);
    }

    #[test]
    fn binstall_and_homebrew_come_from_the_manifest() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("release");
        let release = write_release(&test_key(), &fake_bins(tmp.path()), TARGET, &out).unwrap();
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(MANIFEST)).unwrap()).unwrap();
        let binstall_text = std::fs::read_to_string(out.join("binstall.toml")).unwrap();
        let parsed: toml::Value = toml::from_str(&binstall_text).unwrap();
        let meta = &parsed["package"]["metadata"]["binstall"];
        assert_eq!(
            meta["pkg-url"].as_str().unwrap(),
            format!(
                "{}/captain-hook-{{ version }}-{{ target }}.tar.gz",
                download_base()
            )
        );
        assert_eq!(
            meta["signing"]["pubkey"].as_str().unwrap(),
            release.public_key
        );
        let formula = std::fs::read_to_string(out.join("captain-hook.rb")).unwrap();
        let sha = manifest["targets"][0]["sha256"].as_str().unwrap();
        assert!(formula.contains(&format!("sha256 \"{sha}\"")), "{formula}");
        assert!(
            formula.contains("on_linux do\n    on_intel do"),
            "{formula}"
        );
        assert!(
            !formula.contains("on_macos"),
            "no macOS archive, no macOS block"
        );
        // A manifest with no target Homebrew knows is an error, not an empty formula.
        let mut odd = manifest.clone();
        odd["targets"][0]["target"] = "riscv64gc-unknown-none-elf".into();
        assert!(homebrew(&odd).is_err());
    }

    #[test]
    fn out_is_replaced_only_when_it_is_a_release() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("mine");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("notes.txt"), "keep me").unwrap();
        let e = write_release(&test_key(), &fake_bins(tmp.path()), TARGET, &out).unwrap_err();
        assert!(e.to_string().contains("neither empty nor"), "{e}");
        assert!(out.join("notes.txt").is_file());
        let e = write_release(
            &test_key(),
            &tmp.path().join("nowhere"),
            TARGET,
            &tmp.path().join("r"),
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("--bins"), "{e:#}");
        let e = write_release(
            &test_key(),
            &fake_bins(tmp.path()),
            "../x",
            &tmp.path().join("r"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("not a target triple"), "{e}");
    }
}
