//! Writes each builtin pack's hook files a second time without their inline tests, into
//! `$OUT_DIR/packs/<pack>/hooks/`, for the load every worker does at start.
//!
//! Why: the tests are most of the packs' text, and a worker parsed all of that TOML at every
//! start only to skip it, since nothing at run time reads them; `capt-hook pack test` and the
//! unit tests still load the files whole.
//!
//! A test table's lines are blanked, not removed, so every line and column of what remains is
//! where it is in the real file (hook sources and load errors name those positions). The
//! blanking is checked here: the copy must parse to the original with each hook's `test` key
//! removed, or the build fails naming the file.

use std::path::{Path, PathBuf};

/// A build step's failure, shown by cargo as the build script's error.
type Failed = Box<dyn std::error::Error>;

fn main() -> Result<(), Failed> {
    let var = |name: &str| std::env::var(name).map_err(|e| format!("{name}: {e}"));
    let packs = PathBuf::from(var("CARGO_MANIFEST_DIR")?).join("packs");
    let out = PathBuf::from(var("OUT_DIR")?).join("packs");
    println!("cargo:rerun-if-changed=packs");
    for pack in entries(&packs)? {
        let dest = out.join(name(&pack)?).join("hooks");
        std::fs::create_dir_all(&dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
        for file in entries(&pack.join("hooks"))? {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("reading {}: {e}", file.display()))?;
            let blanked = without_tests(&text);
            check(&text, &blanked).map_err(|why| {
                format!(
                    "{}: the copy without inline tests is not the file minus its tests ({why}); \
                     write each test as a `[[hook.test]]` table (with `[hook.test.*]` sub-tables)",
                    file.display()
                )
            })?;
            let to = dest.join(name(&file)?);
            std::fs::write(&to, blanked).map_err(|e| format!("writing {}: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, Failed> {
    let listing = |e: std::io::Error| format!("listing {}: {e}", dir.display());
    let mut list = std::fs::read_dir(dir)
        .map_err(listing)?
        .map(|e| e.map(|e| e.path()).map_err(listing))
        .collect::<Result<Vec<_>, _>>()?;
    list.sort();
    Ok(list)
}

/// The last component of `path`.
fn name(path: &Path) -> Result<&std::ffi::OsStr, Failed> {
    path.file_name()
        .ok_or_else(|| format!("{} has no file name", path.display()).into())
}

/// The inline tests' tables: a hook's, and a styleguide rule's own.
const TEST_TABLES: [&str; 2] = ["hook.test", "hook.rules.test"];

/// `text` with every line of a test table (`[[hook.test]]`, `[[hook.rules.test]]`: its header,
/// body and sub-tables) emptied, up to the next header of anything else.
fn without_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_test = false;
    for line in text.split_inclusive('\n') {
        if let Some(key) = header(line) {
            in_test = TEST_TABLES
                .iter()
                .any(|t| key == *t || key.starts_with(&format!("{t}.")));
        }
        if in_test {
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The dotted key of a table header line (`[a.b]` or `[[a.b]]`, spaces removed).
fn header(line: &str) -> Option<String> {
    let line = line.trim();
    let line = line.split_once('#').map_or(line, |(h, _)| h).trim_end();
    let inner = line
        .strip_prefix("[[")
        .and_then(|l| l.strip_suffix("]]"))
        .or_else(|| line.strip_prefix('[').and_then(|l| l.strip_suffix(']')))?;
    let key: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
    key.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .then_some(key)
}

/// Whether `blanked` parses to `text` with the `test` key of every `[[hook]]` table and of its
/// styleguide rules removed.
fn check(text: &str, blanked: &str) -> Result<(), Failed> {
    let mut whole: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let stripped: toml::Table = toml::from_str(blanked).map_err(|e| e.to_string())?;
    if let Some(toml::Value::Array(hooks)) = whole.get_mut("hook") {
        for hook in hooks {
            if let toml::Value::Table(t) = hook {
                t.remove("test");
                if let Some(toml::Value::Array(rules)) = t.get_mut("rules") {
                    for rule in rules {
                        if let toml::Value::Table(r) = rule {
                            r.remove("test");
                        }
                    }
                }
            }
        }
    }
    if whole == stripped {
        Ok(())
    } else {
        Err("the two parse differently".into())
    }
}
