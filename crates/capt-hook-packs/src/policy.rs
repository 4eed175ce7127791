//! Policy packs: packs an organisation (or the user) installs outside any project, loaded
//! before the project's own hooks, never turned off by a project's `config.toml`.
//!
//! Where: the directories in `CAPT_HOOK_POLICY_DIR` (`:`-separated), else
//! `/etc/captain-hook/policy` and `<config dir>/captain-hook/policy` (`~/.config/...`). Each
//! subdirectory holding a `pack.toml` is a pack, laid out as any pack (`pack.toml`,
//! `hooks/*.toml`).
//!
//! Signatures: a pack may carry `SHA256SUMS` (as `sha256sum` writes it, paths relative to the
//! pack) and `SHA256SUMS.minisig`, a minisign signature of that file. When a trusted key is
//! configured (`CAPT_HOOK_POLICY_KEY`, a minisign public key file, else
//! `/etc/captain-hook/policy.pub` when it exists), a pack loads only when the signature
//! verifies with that key, every file it lists has its digest, and every file loaded is
//! listed. Otherwise the pack is a load error naming the file at fault, so its hooks do not run
//! and the calls they might have denied ask the user, naming that file. Without a trusted key,
//! packs load unverified and `capt-hook policy status` says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::whole;
use capt_hook_engine::registry::Registry;
use capt_hook_toml::loader::{LoadError, load_source};
use sha2::{Digest, Sha256};

pub use capt_hook_proto::env::{CAPT_HOOK_POLICY_DIR, CAPT_HOOK_POLICY_KEY};

/// The organisation's policy directory.
pub const SYSTEM_DIR: &str = "/etc/captain-hook/policy";
/// The organisation's trusted key, used when `CAPT_HOOK_POLICY_KEY` is not set.
pub const SYSTEM_KEY: &str = "/etc/captain-hook/policy.pub";
/// The digests a signature covers, in a pack.
pub const SUMS: &str = "SHA256SUMS";
/// The minisign signature of [`SUMS`], in a pack.
pub const SIGNATURE: &str = "SHA256SUMS.minisig";

/// Where policy comes from and which key it must be signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Directories searched for packs, in load order.
    pub dirs: Vec<PathBuf>,
    /// The trusted key's file, when one is configured.
    pub key: Option<PathBuf>,
}

impl Settings {
    /// The settings the process environment gives.
    pub fn from_env() -> Settings {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dirs = match var(CAPT_HOOK_POLICY_DIR) {
            Some(v) => std::env::split_paths(&v).collect(),
            None => vec![
                PathBuf::from(SYSTEM_DIR),
                capt_hook_proto::paths::config_base(&capt_hook_proto::paths::home())
                    .join("captain-hook")
                    .join("policy"),
            ],
        };
        let key = var(CAPT_HOOK_POLICY_KEY)
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from(SYSTEM_KEY)).filter(|p| p.exists()));
        Settings { dirs, key }
    }
}

/// How far a policy pack is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Its signature verifies with the trusted key and every file matches.
    Signed,
    /// No trusted key is configured: loaded as it is.
    Unverified,
    /// A trusted key is configured and the pack does not check out: not loaded.
    Refused(LoadError),
}

/// One policy pack, as `capt-hook policy status` shows it.
#[derive(Debug, Clone)]
pub struct PolicyPack {
    /// `policy:<name>`.
    pub id: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Whether it was verified.
    pub trust: Trust,
    /// Hooks it registered.
    pub hooks: usize,
}

/// What loading the policy produced.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Every pack found, in load order.
    pub packs: Vec<PolicyPack>,
    /// Packs that did not load (refused or broken): their hooks are not running.
    pub errors: Vec<LoadError>,
    /// Files whose change should reload the project.
    pub watched: Vec<PathBuf>,
}

/// Reads the trusted key; an unreadable key refuses every pack (fail closed), naming it.
fn read_key(path: &Path) -> Result<minisign_verify::PublicKey, LoadError> {
    minisign_verify::PublicKey::from_file(path).map_err(|e| {
        whole(
            path,
            format!("the trusted policy key cannot be read ({e}); no policy pack loads until it is fixed"),
        )
    })
}

/// Lowercase hex SHA-256 of `bytes`.
fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `SHA256SUMS` read: relative path → digest. Lines are `<64 hex><space><space or *><path>`;
/// an absolute path or one with `..` is refused.
fn parse_sums(file: &Path, text: &str) -> Result<BTreeMap<String, String>, LoadError> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| LoadError {
            file: file.to_path_buf(),
            line: i + 1,
            column: 1,
            field: None,
            span: None,
            message: format!("{why} (lines are `<sha256 hex>  <path>`)"),
        };
        let (digest, rest) = line.split_at_checked(64).ok_or_else(|| bad("short line"))?;
        if !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("not a sha256 digest"));
        }
        let path = rest
            .strip_prefix("  ")
            .or_else(|| rest.strip_prefix(" *"))
            .ok_or_else(|| bad("no path after the digest"))?;
        let path = path.strip_prefix("./").unwrap_or(path);
        if path.starts_with('/') || path.split('/').any(|c| c == "..") {
            return Err(bad("paths must stay inside the pack"));
        }
        out.insert(path.to_owned(), digest.to_ascii_lowercase());
    }
    Ok(out)
}

/// Checks a pack against `key`: the signature over `SHA256SUMS`, then every listed digest, then
/// that every file in `loaded` (relative path → bytes) is listed with its digest. The error
/// names the file at fault.
fn verify(
    dir: &Path,
    key: &minisign_verify::PublicKey,
    key_path: &Path,
    loaded: &BTreeMap<String, Vec<u8>>,
) -> Result<(), LoadError> {
    let sig_path = dir.join(SIGNATURE);
    let sums_path = dir.join(SUMS);
    let sig_text = match std::fs::read_to_string(&sig_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(whole(
                &sig_path,
                format!(
                    "the policy pack is not signed (no {SIGNATURE}) and a trusted key is \
                     configured ({}): it does not load",
                    key_path.display()
                ),
            ));
        }
        Err(e) => return Err(whole(&sig_path, format!("cannot read: {e}"))),
    };
    let sums = std::fs::read(&sums_path)
        .map_err(|e| whole(&sums_path, format!("cannot read the signed digests: {e}")))?;
    let signature = minisign_verify::Signature::decode(&sig_text)
        .map_err(|e| whole(&sig_path, format!("not a minisign signature: {e}")))?;
    key.verify(&sums, &signature, false).map_err(|e| {
        whole(
            &sig_path,
            format!(
                "the signature of {SUMS} does not verify with the trusted key {} ({e}): the \
                 digests were changed or signed by another key",
                key_path.display()
            ),
        )
    })?;
    let listed = parse_sums(&sums_path, &String::from_utf8_lossy(&sums))?;
    for (rel, digest) in &listed {
        let path = dir.join(rel);
        let bytes = match loaded.get(rel) {
            Some(b) => b.clone(),
            None => std::fs::read(&path).map_err(|e| {
                whole(
                    &path,
                    format!("listed in the signed {SUMS} but cannot be read: {e}"),
                )
            })?,
        };
        if sha256(&bytes) != *digest {
            return Err(whole(
                &path,
                format!(
                    "altered since the policy pack was signed (its sha256 differs from {SUMS})"
                ),
            ));
        }
    }
    if let Some(rel) = loaded.keys().find(|rel| !listed.contains_key(*rel)) {
        return Err(whole(
            &dir.join(rel),
            format!("not covered by the policy pack's signature (not in {SUMS})"),
        ));
    }
    Ok(())
}

/// `path` relative to the pack at `dir`, `/`-separated, as `SHA256SUMS` names it.
fn relative(dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The packs in `dir`: its subdirectories with a `pack.toml`, sorted by name.
fn pack_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("pack.toml").is_file())
        .collect();
    out.sort();
    out
}

/// Loads every policy pack `settings` names into `registry`.
pub fn load(settings: &Settings, registry: &mut Registry) -> Policy {
    let mut out = Policy::default();
    let key = settings
        .key
        .as_ref()
        .map(|path| (path.clone(), read_key(path)));
    if let Some((path, _)) = &key {
        out.watched.push(path.clone());
    }
    for dir in &settings.dirs {
        out.watched.push(dir.clone());
        for pack in pack_dirs(dir) {
            let name = pack
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut info = PolicyPack {
                id: format!("policy:{name}"),
                dir: pack.clone(),
                trust: Trust::Unverified,
                hooks: 0,
            };
            out.watched.push(pack.join(SUMS));
            out.watched.push(pack.join(SIGNATURE));
            let files = match crate::read_pack_dir(&pack, &mut out.watched) {
                Ok((_, files)) => files,
                Err(e) => {
                    info.trust = Trust::Refused(e.clone());
                    out.errors.push(e);
                    out.packs.push(info);
                    continue;
                }
            };
            if let Some((key_path, key)) = &key {
                let checked = key.as_ref().map_err(Clone::clone).and_then(|key| {
                    let mut loaded: BTreeMap<String, Vec<u8>> = files
                        .iter()
                        .map(|(_, text, path)| (relative(&pack, path), text.clone().into_bytes()))
                        .collect();
                    let manifest = pack.join("pack.toml");
                    let bytes = std::fs::read(&manifest)
                        .map_err(|e| whole(&manifest, format!("cannot read: {e}")))?;
                    loaded.insert("pack.toml".into(), bytes);
                    verify(&pack, key, key_path, &loaded)
                });
                match checked {
                    Ok(()) => info.trust = Trust::Signed,
                    Err(e) => {
                        info.trust = Trust::Refused(e.clone());
                        out.errors.push(e);
                        out.packs.push(info);
                        continue;
                    }
                }
            }
            for (stem, text, path) in files {
                let mut scratch = Registry::new();
                let errors =
                    load_source(&text, &format!("policy-{name}/{stem}"), &path, &mut scratch);
                if !errors.is_empty() {
                    out.errors.extend(errors);
                    continue;
                }
                for hook in scratch.hooks() {
                    registry.push((**hook).clone());
                    info.hooks += 1;
                }
            }
            out.packs.push(info);
        }
    }
    out
}

/// `SHA256SUMS` for the pack at `dir`: `pack.toml` and every hook file, as `sha256sum` writes
/// them, ready to sign with `minisign -Sm SHA256SUMS`.
pub fn sums(dir: &Path) -> Result<String, LoadError> {
    let mut watched = Vec::new();
    let (_, files) = crate::read_pack_dir(dir, &mut watched)?;
    let manifest = dir.join("pack.toml");
    let bytes =
        std::fs::read(&manifest).map_err(|e| whole(&manifest, format!("cannot read: {e}")))?;
    let mut out = format!("{}  pack.toml\n", sha256(&bytes));
    for (_, text, path) in files {
        out.push_str(&format!(
            "{}  {}\n",
            sha256(text.as_bytes()),
            relative(dir, &path)
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendored signed pack and keys (`tests/fixtures/policy/make.py` wrote them).
    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/policy")
    }

    /// A copy of the signed fixture pack in a temp dir: `<tmp>/policy/org`.
    fn signed_copy() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let pack = tmp.path().join("policy/org");
        std::fs::create_dir_all(pack.join("hooks")).unwrap();
        let src = fixtures().join("org");
        for rel in ["pack.toml", "hooks/guard.toml", SUMS, SIGNATURE] {
            std::fs::copy(src.join(rel), pack.join(rel)).unwrap();
        }
        (tmp, pack)
    }

    fn settings(tmp: &tempfile::TempDir, key: Option<&str>) -> Settings {
        Settings {
            dirs: vec![tmp.path().join("policy")],
            key: key.map(|k| fixtures().join(k)),
        }
    }

    fn refused(policy: &Policy) -> Option<&LoadError> {
        match &policy.packs[0].trust {
            Trust::Refused(e) => Some(e),
            _ => None,
        }
    }

    #[test]
    fn a_signed_pack_loads_with_the_trusted_key() {
        let (tmp, _) = signed_copy();
        let mut reg = Registry::new();
        let policy = load(&settings(&tmp, Some("trusted.pub")), &mut reg);
        assert!(policy.errors.is_empty(), "{:?}", policy.errors);
        assert_eq!(policy.packs[0].trust, Trust::Signed);
        assert_eq!(policy.packs[0].id, "policy:org");
        assert!(policy.packs[0].hooks > 0);
        assert!(
            reg.hooks()
                .iter()
                .all(|h| h.name.starts_with("policy-org/guard:"))
        );
    }

    #[test]
    fn without_a_key_packs_load_unverified() {
        let (tmp, pack) = signed_copy();
        std::fs::remove_file(pack.join(SIGNATURE)).unwrap();
        let mut reg = Registry::new();
        let policy = load(&settings(&tmp, None), &mut reg);
        assert_eq!(policy.packs[0].trust, Trust::Unverified);
        assert!(!reg.is_empty());
    }

    /// With a trusted key, an altered, added, unsigned or foreign-signed pack does not load,
    /// and the error names the file at fault.
    #[test]
    fn with_a_key_every_tampering_is_refused_naming_the_file() {
        // What is done to the pack, how, the file the error must name, what it must say.
        type Tampering = (&'static str, fn(&Path), &'static str, &'static str);
        let cases: [Tampering; 5] = [
            (
                "altered hook file",
                |p| {
                    let f = p.join("hooks/guard.toml");
                    let mut text = std::fs::read_to_string(&f).unwrap();
                    text = text.replace("BLOCKED", "blocked");
                    std::fs::write(f, text).unwrap();
                },
                "hooks/guard.toml",
                "altered",
            ),
            (
                "added hook file",
                |p| {
                    std::fs::write(
                        p.join("hooks/extra.toml"),
                        "[[hook]]\nkind = \"approve\"\nlabel = \"all\"\n",
                    )
                    .unwrap();
                },
                "hooks/extra.toml",
                "not covered",
            ),
            (
                "unsigned",
                |p| std::fs::remove_file(p.join(SIGNATURE)).unwrap(),
                SIGNATURE,
                "not signed",
            ),
            (
                "hook file altered and the digests written anew",
                |p| {
                    let f = p.join("hooks/guard.toml");
                    let text = std::fs::read_to_string(&f).unwrap();
                    std::fs::write(&f, text.replace("BLOCKED", "blocked")).unwrap();
                    std::fs::write(p.join(SUMS), sums(p).unwrap()).unwrap();
                },
                SIGNATURE,
                "does not verify",
            ),
            (
                "hook file removed",
                |p| std::fs::remove_file(p.join("hooks/guard.toml")).unwrap(),
                "hooks/guard.toml",
                "cannot be read",
            ),
        ];
        for (what, tamper, file, says) in cases {
            let (tmp, pack) = signed_copy();
            tamper(&pack);
            let mut reg = Registry::new();
            let policy = load(&settings(&tmp, Some("trusted.pub")), &mut reg);
            let e = refused(&policy).unwrap_or_else(|| panic!("{what}: loaded"));
            assert!(e.file.ends_with(file), "{what}: {e}");
            assert!(e.message.contains(says), "{what}: {e}");
            assert_eq!(policy.errors.len(), 1, "{what}");
            assert!(reg.is_empty(), "{what}: no hook of a refused pack runs");
        }
        // Signed, but by another key than the trusted one.
        let (tmp, _) = signed_copy();
        let policy = load(&settings(&tmp, Some("other.pub")), &mut Registry::new());
        let e = refused(&policy).unwrap();
        assert!(e.file.ends_with(SIGNATURE), "{e}");
        // A key that cannot be read refuses every pack, naming the key.
        let policy = load(&settings(&tmp, Some("missing.pub")), &mut Registry::new());
        assert!(refused(&policy).unwrap().file.ends_with("missing.pub"));
    }

    #[test]
    fn sums_lists_what_loads_and_bad_lines_are_named() {
        let (_tmp, pack) = signed_copy();
        let fresh = sums(&pack).unwrap();
        assert_eq!(
            fresh,
            std::fs::read_to_string(pack.join(SUMS)).unwrap(),
            "the fixture's digests are what `sums` writes"
        );
        let e = parse_sums(Path::new("S"), "abc  x\n").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_sums(Path::new("S"), &format!("{}  ../x\n", "0".repeat(64))).unwrap_err();
        assert!(e.message.contains("inside the pack"), "{e}");
    }
}
