//! `cargo xtask app [--bins DIR] [--out DIR]`: assembles `Captain Hook.app` from release binaries
//! and checks the result.
//!
//! ```text
//! Captain Hook.app/Contents/
//!   Info.plist                  from macos-app/Info.plist, version filled in
//!   PkgInfo
//!   MacOS/capt-hook             the CLI (CFBundleExecutable)
//!   Helpers/capt-hookd          the host the launchd agent runs
//!   Helpers/capt-hook-worker    found beside the host
//!   Helpers/hook                the client Claude Code runs (finds the host beside it)
//!   Resources/plugin/           the Claude Code plugin, bin/hook linked to Helpers/hook
//! ```
//!
//! The binaries are universal (`lipo`) when release builds for both Apple targets exist, else
//! the host's own. On Linux that makes a bundle whose layout and plists are right but whose
//! binaries are ELF: the step says so instead of pretending. Signing and notarization are
//! `macos-app/sign.sh` and `macos-app/notarize.sh`, on a Mac.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The bundle's directory name.
pub const APP_NAME: &str = "Captain Hook.app";
/// The bundle's main executable, under `Contents/MacOS/`.
const MAIN: &str = "capt-hook";
/// The runtime, under `Contents/Helpers/`.
const HELPERS: [&str; 3] = ["capt-hookd", "capt-hook-worker", "hook"];
/// The Apple targets a universal bundle joins.
const APPLE_TARGETS: [&str; 2] = ["aarch64-apple-darwin", "x86_64-apple-darwin"];
/// The Info.plist template; its one placeholder is `@VERSION@`.
const INFO_PLIST: &str = include_str!("../../macos-app/Info.plist");
/// What `PkgInfo` holds for an application with no creator code.
const PKG_INFO: &str = "APPL????";

/// Where the bundle's binaries come from.
#[derive(Debug)]
pub enum Bins {
    /// One directory holding every binary, for one architecture.
    Single(PathBuf),
    /// Release directories of both Apple targets, joined with `lipo`.
    Universal([PathBuf; 2]),
}

/// Runs `cargo xtask app` with its arguments.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let mut bins_dir = None;
    let mut out = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--bins" => bins_dir = Some(PathBuf::from(it.next().context("--bins needs a DIR")?)),
            "--out" => out = Some(PathBuf::from(it.next().context("--out needs a DIR")?)),
            other => {
                bail!("unknown argument {other:?}; usage: cargo xtask app [--bins DIR] [--out DIR]")
            }
        }
    }
    let target = crate::target_dir()?;
    let mut notes = Vec::new();
    let bins = match bins_dir {
        Some(dir) => Bins::Single(dir),
        None => match universal_sources(&target) {
            Some(dirs) if crate::on_path("lipo") => Bins::Universal(dirs),
            Some(_) => {
                notes.push(
                    "both Apple targets are built but `lipo` is not on PATH: not universal"
                        .to_owned(),
                );
                Bins::Single(crate::dist()?)
            }
            None => {
                notes.push(format!(
                    "not universal: release builds for {} were not both found under {}",
                    APPLE_TARGETS.join(" and "),
                    target.display()
                ));
                Bins::Single(crate::dist()?)
            }
        },
    };
    let out = out.unwrap_or_else(|| target.join("app"));
    let bundle = assemble(&bins, &crate::workspace_root().join("plugin"), &out)?;
    let check = validate(&bundle);
    notes.extend(check.notes);
    println!("assembled {}", bundle.display());
    for n in &notes {
        println!("  note: {n}");
    }
    if !check.problems.is_empty() {
        bail!(
            "the bundle is not valid:\n  {}",
            check.problems.join("\n  ")
        );
    }
    println!(
        "  layout and plists valid; sign on a Mac with macos-app/sign.sh, then macos-app/notarize.sh"
    );
    Ok(())
}

/// The release directories of both Apple targets when each holds every binary.
fn universal_sources(target: &Path) -> Option<[PathBuf; 2]> {
    let dirs = APPLE_TARGETS.map(|t| target.join(t).join("release"));
    let complete = |d: &PathBuf| HELPERS.iter().chain(&[MAIN]).all(|b| d.join(b).is_file());
    dirs.iter().all(complete).then_some(dirs)
}

/// Builds `<out>/Captain Hook.app` (replacing an old one) and returns its path.
pub fn assemble(bins: &Bins, plugin: &Path, out: &Path) -> anyhow::Result<PathBuf> {
    let bundle = out.join(APP_NAME);
    if bundle.exists() {
        std::fs::remove_dir_all(&bundle)
            .with_context(|| format!("removing the old {}", bundle.display()))?;
    }
    let contents = bundle.join("Contents");
    for dir in ["MacOS", "Helpers", "Resources"] {
        std::fs::create_dir_all(contents.join(dir))?;
    }
    let info = INFO_PLIST.replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    std::fs::write(contents.join("Info.plist"), info)?;
    std::fs::write(contents.join("PkgInfo"), PKG_INFO)?;
    place(bins, MAIN, &contents.join("MacOS").join(MAIN))?;
    for helper in HELPERS {
        place(bins, helper, &contents.join("Helpers").join(helper))?;
    }
    let resources_plugin = contents.join("Resources").join("plugin");
    crate::copy_dir(plugin, &resources_plugin)
        .with_context(|| format!("copying the plugin from {}", plugin.display()))?;
    // The plugin's shim would look for an installed client; inside the bundle the client is
    // right there, and a relative link survives moving the bundle.
    let shim = resources_plugin.join("bin").join("hook");
    std::fs::remove_file(&shim).with_context(|| format!("removing {}", shim.display()))?;
    std::os::unix::fs::symlink("../../../Helpers/hook", &shim)?;
    Ok(bundle)
}

/// Puts one binary at `to`, joined with `lipo` for a universal bundle, mode 0755.
fn place(bins: &Bins, name: &str, to: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match bins {
        Bins::Single(dir) => {
            let from = dir.join(name);
            std::fs::copy(&from, to).with_context(|| format!("copying {}", from.display()))?;
        }
        Bins::Universal(dirs) => {
            let status = Command::new("lipo")
                .arg("-create")
                .args(dirs.iter().map(|d| d.join(name)))
                .arg("-output")
                .arg(to)
                .status()
                .context("running lipo")?;
            if !status.success() {
                bail!("lipo -create failed for {name} ({status})");
            }
        }
    }
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// What [`validate`] found.
#[derive(Debug, Default)]
pub struct Check {
    /// What makes the bundle invalid.
    pub problems: Vec<String>,
    /// What is valid but worth saying (ELF binaries, a single architecture).
    pub notes: Vec<String>,
}

/// Checks a bundle's layout and plists the way a Mac would read them, without a Mac.
pub fn validate(bundle: &Path) -> Check {
    let mut check = Check::default();
    let contents = bundle.join("Contents");
    let info = match plist::Value::from_file(contents.join("Info.plist")) {
        Ok(v) => v,
        Err(e) => {
            check
                .problems
                .push(format!("Contents/Info.plist does not parse: {e}"));
            return check;
        }
    };
    let Some(dict) = info.as_dictionary() else {
        check
            .problems
            .push("Contents/Info.plist is not a dictionary".into());
        return check;
    };
    let string = |key: &str| dict.get(key).and_then(plist::Value::as_string);
    for key in [
        "CFBundleIdentifier",
        "CFBundleExecutable",
        "CFBundleName",
        "CFBundlePackageType",
        "CFBundleShortVersionString",
        "CFBundleVersion",
        "CFBundleInfoDictionaryVersion",
        "LSMinimumSystemVersion",
    ] {
        match string(key) {
            None => check
                .problems
                .push(format!("Info.plist: {key} is missing or not a string")),
            Some(v) if v.contains('@') => check
                .problems
                .push(format!("Info.plist: {key} still holds a placeholder ({v})")),
            Some(_) => {}
        }
    }
    if string("CFBundlePackageType").is_some_and(|t| t != "APPL") {
        check
            .problems
            .push("Info.plist: CFBundlePackageType is not APPL".into());
    }
    let dotted = |v: &str| {
        let parts: Vec<&str> = v.split('.').collect();
        (1..=3).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    };
    for key in ["CFBundleShortVersionString", "CFBundleVersion"] {
        if string(key).is_some_and(|v| !dotted(v)) {
            check
                .problems
                .push(format!("Info.plist: {key} is not a dotted number"));
        }
    }
    if string("CFBundleIdentifier").is_some_and(|id| {
        id.split('.').count() < 3
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    }) {
        check
            .problems
            .push("Info.plist: CFBundleIdentifier is not reverse-DNS".into());
    }
    if dict.get("LSUIElement").and_then(plist::Value::as_boolean) != Some(true) {
        check
            .problems
            .push("Info.plist: LSUIElement must be true (the app has no window)".into());
    }
    match std::fs::read_to_string(contents.join("PkgInfo")) {
        Ok(p) if p == PKG_INFO => {}
        Ok(p) => check
            .problems
            .push(format!("PkgInfo holds {p:?}, not {PKG_INFO:?}")),
        Err(e) => check.problems.push(format!("PkgInfo: {e}")),
    }
    let main = string("CFBundleExecutable").unwrap_or(MAIN).to_owned();
    let mut executables = vec![contents.join("MacOS").join(&main)];
    executables.extend(HELPERS.iter().map(|h| contents.join("Helpers").join(h)));
    let mut elf = Vec::new();
    for exe in &executables {
        let shown = exe
            .strip_prefix(bundle)
            .unwrap_or(exe)
            .display()
            .to_string();
        match executable_kind(exe) {
            Err(e) => check.problems.push(format!("{shown}: {e}")),
            Ok(Kind::MachO { universal }) => {
                if !universal {
                    check
                        .notes
                        .push(format!("{shown} is a single-architecture Mach-O"));
                }
            }
            Ok(Kind::Other) => elf.push(shown),
        }
    }
    if !elf.is_empty() {
        check.notes.push(format!(
            "{} binaries are not Mach-O (built on this non-Mac host): the layout is a valid \
             bundle, but it runs only with Apple binaries in it",
            elf.len()
        ));
    }
    let plugin = contents.join("Resources").join("plugin");
    for file in [".claude-plugin/plugin.json", "hooks/hooks.json"] {
        let path = plugin.join(file);
        match std::fs::read(&path).map(|b| serde_json::from_slice::<serde_json::Value>(&b)) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => check.problems.push(format!("Resources/plugin/{file}: {e}")),
            Err(e) => check.problems.push(format!("Resources/plugin/{file}: {e}")),
        }
    }
    let shim = plugin.join("bin").join("hook");
    let client = contents.join("Helpers").join("hook");
    match (shim.canonicalize(), client.canonicalize()) {
        (Ok(a), Ok(b)) if a == b => {}
        _ => check
            .problems
            .push("Resources/plugin/bin/hook does not lead to Contents/Helpers/hook".into()),
    }
    check
}

/// What kind of executable a file is.
enum Kind {
    /// A Mach-O image, universal (fat) or not.
    MachO { universal: bool },
    /// Anything else with the executable bit (an ELF from a Linux build).
    Other,
}

fn executable_kind(path: &Path) -> Result<Kind, String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("not executable".into());
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| format!("unreadable: {e}"))?;
    Ok(match u32::from_be_bytes(magic) {
        0xcafe_babe | 0xcafe_babf => Kind::MachO { universal: true },
        0xfeed_facf | 0xcffa_edfe | 0xfeed_face | 0xcefa_edfe => Kind::MachO { universal: false },
        _ => Kind::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stand-ins for the release binaries: the layout checks never run them.
    fn fake_bins(dir: &Path, magic: &[u8]) {
        for name in HELPERS.iter().chain(&[MAIN]) {
            std::fs::write(dir.join(name), magic).unwrap();
        }
    }

    fn plugin() -> PathBuf {
        crate::workspace_root().join("plugin")
    }

    #[test]
    fn an_assembled_bundle_is_valid_and_says_its_binaries_are_not_mach_o() {
        let tmp = tempfile::tempdir().unwrap();
        let bins = tmp.path().join("bins");
        std::fs::create_dir(&bins).unwrap();
        fake_bins(&bins, b"\x7fELF....");
        let bundle = assemble(&Bins::Single(bins), &plugin(), &tmp.path().join("out")).unwrap();
        assert!(bundle.ends_with(APP_NAME));
        let check = validate(&bundle);
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        assert!(
            check.notes.iter().any(|n| n.contains("not Mach-O")),
            "{:?}",
            check.notes
        );
        let info = plist::Value::from_file(bundle.join("Contents/Info.plist")).unwrap();
        let info = info.as_dictionary().unwrap();
        assert_eq!(
            info.get("CFBundleShortVersionString")
                .and_then(plist::Value::as_string),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(
            info.get("CFBundleExecutable")
                .and_then(plist::Value::as_string),
            Some(MAIN)
        );
    }

    #[test]
    fn universal_mach_o_binaries_pass_without_notes() {
        let tmp = tempfile::tempdir().unwrap();
        fake_bins(tmp.path(), &[0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2]);
        let bundle = assemble(&Bins::Single(tmp.path().into()), &plugin(), tmp.path()).unwrap();
        let check = validate(&bundle);
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        assert!(check.notes.is_empty(), "{:?}", check.notes);
    }

    #[test]
    fn a_missing_helper_a_bad_plist_and_a_broken_shim_are_each_reported() {
        let tmp = tempfile::tempdir().unwrap();
        fake_bins(tmp.path(), b"\x7fELF");
        let bundle = assemble(&Bins::Single(tmp.path().into()), &plugin(), tmp.path()).unwrap();
        std::fs::remove_file(bundle.join("Contents/Helpers/capt-hookd")).unwrap();
        std::fs::remove_file(bundle.join("Contents/Helpers/hook")).unwrap();
        let problems = validate(&bundle).problems.join("\n");
        assert!(problems.contains("Helpers/capt-hookd"), "{problems}");
        assert!(problems.contains("bin/hook does not lead"), "{problems}");

        let info = bundle.join("Contents/Info.plist");
        let text = std::fs::read_to_string(&info).unwrap();
        std::fs::write(
            &info,
            text.replace("<true/>", "<false/>")
                .replace(env!("CARGO_PKG_VERSION"), "@VERSION@"),
        )
        .unwrap();
        let problems = validate(&bundle).problems.join("\n");
        assert!(problems.contains("LSUIElement"), "{problems}");
        assert!(problems.contains("placeholder"), "{problems}");
        std::fs::write(&info, "<plist><dict><key>x</key>").unwrap();
        let problems = validate(&bundle).problems.join("\n");
        assert!(problems.contains("does not parse"), "{problems}");
    }

    #[test]
    fn the_signing_entitlements_parse_as_a_plist_dictionary() {
        let path = crate::workspace_root().join("macos-app/entitlements.plist");
        let v = plist::Value::from_file(&path).unwrap();
        assert!(v.as_dictionary().is_some());
    }

    #[test]
    fn universal_needs_every_binary_of_both_apple_targets() {
        let tmp = tempfile::tempdir().unwrap();
        for t in APPLE_TARGETS {
            let d = tmp.path().join(t).join("release");
            std::fs::create_dir_all(&d).unwrap();
            fake_bins(&d, b"x");
        }
        assert!(universal_sources(tmp.path()).is_some());
        std::fs::remove_file(tmp.path().join(APPLE_TARGETS[1]).join("release/hook")).unwrap();
        assert!(universal_sources(tmp.path()).is_none());
    }
}
