//! The workspace's architecture kept by tests (`docs/architecture.md` draws it): every crate
//! sits in a layer and depends only on crates of lower layers, and no crate's modules import
//! each other in a cycle of more than two files.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Each workspace crate's layer: a crate may depend (normal, build or dev) only on crates of a
/// strictly lower layer, so no dependency points sideways or up and there is no cycle. A new
/// crate must be placed here, where its one job puts it.
const LAYERS: &[(&str, u32)] = &[
    // What crosses process boundaries, a transcript: nothing of ours below them.
    ("capt-hook-proto", 0),
    ("capt-hook-transcript", 0),
    // Signing releases and policy packs (minisign, SHA256SUMS): nothing of ours.
    ("capt-hook-sign", 0),
    // A shell line: nothing of ours at run time; its property tests share proto's config.
    ("capt-hook-shell", 1),
    ("capt-hook-state", 1),
    ("capt-hook-llm", 1),
    ("capt-hook-rust-project", 1),
    // One event: conditions, the fold, the envelope.
    ("capt-hook-core", 2),
    ("capt-hook-code", 3),
    // Other agents' payloads read as Claude Code's, our verdicts in their shapes: core's types.
    ("capt-hook-agents", 3),
    ("capt-hook-journal", 3),
    // The SDK, bottom up: the engine names none of the crates built on it.
    ("capt-hook-engine", 4),
    ("capt-hook-kinds", 5),
    ("capt-hook-toml", 6),
    ("capt-hook-testing", 6),
    ("capt-hook-packs", 7),
    ("capt-hook-serve", 8),
    // The front a hook project depends on: re-exports and `serve`.
    ("captain-hook", 9),
    // Binaries and what drives them.
    ("capt-hook-client", 10),
    ("capt-hookd", 10),
    ("capt-hook-cli", 11),
    ("capt-hook-worker", 11),
    ("capt-hook-examples", 11),
    ("capt-hook-e2e", 12),
    ("xtask", 12),
];

/// Dependencies a crate must not have even where its layer would allow them: the client that
/// Claude Code starts for every event links the wire types alone (no parser, no async runtime),
/// and the host never links the engine it keeps workers for.
const NEVER: &[(&str, &[&str])] = &[
    (
        "capt-hook-client",
        &[
            "capt-hook-shell",
            "capt-hook-transcript",
            "capt-hook-state",
            "capt-hook-llm",
            "capt-hook-rust-project",
            "capt-hook-core",
            "capt-hook-code",
            "capt-hook-journal",
            "capt-hook-engine",
            "capt-hook-sign",
        ],
    ),
    (
        "capt-hookd",
        &[
            "capt-hook-engine",
            "capt-hook-kinds",
            "capt-hook-toml",
            "capt-hook-testing",
            "capt-hook-packs",
            "capt-hook-serve",
            "captain-hook",
        ],
    ),
];

/// One workspace package as `cargo metadata` describes it.
struct Package {
    name: String,
    /// The directory of its `Cargo.toml`.
    dir: PathBuf,
    /// Its dependencies on other workspace packages (any kind).
    deps: Vec<String>,
}

/// `cargo metadata` of the workspace whose manifest is `manifest`, offline and without
/// dependencies: what the manifests say, as cargo reads them (inherited settings resolved).
pub(crate) fn metadata(manifest: &Path) -> serde_json::Value {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .arg("--manifest-path")
        .arg(manifest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The workspace's packages.
fn packages() -> Vec<Package> {
    let meta = metadata(&super::workspace_root().join("Cargo.toml"));
    let list = meta["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = list.iter().filter_map(|p| p["name"].as_str()).collect();
    list.iter()
        .map(|p| Package {
            name: p["name"].as_str().unwrap().to_owned(),
            dir: Path::new(p["manifest_path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_path_buf(),
            deps: p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_owned)
                .collect(),
        })
        .collect()
}

/// Why `packages` break the layering: one line per offending crate or dependency.
fn layering_violations(packages: &[(&str, Vec<&str>)]) -> Vec<String> {
    let layer: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for (name, deps) in packages {
        let Some(&mine) = layer.get(name) else {
            wrong.push(format!("{name} has no layer in xtask/src/layers.rs"));
            continue;
        };
        for dep in deps {
            match layer.get(dep) {
                Some(&theirs) if theirs < mine => {}
                Some(&theirs) => wrong.push(format!(
                    "{name} (layer {mine}) depends on {dep} (layer {theirs}): only lower layers"
                )),
                None => wrong.push(format!("{dep} has no layer in xtask/src/layers.rs")),
            }
            let banned = NEVER.iter().find(|(n, _)| n == name);
            if banned.is_some_and(|(_, never)| never.contains(dep)) {
                wrong.push(format!("{name} must never depend on {dep}"));
            }
        }
    }
    wrong
}

/// A crate's module files (under `src/`, without `src/bin/`) by module path (`["loader",
/// "parse"]`), with the text that is compiled outside tests.
fn modules(src: &Path) -> BTreeMap<Vec<String>, (PathBuf, String)> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path != src.join("bin") {
                    dirs.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut module: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            found.insert(module, (path, text));
        }
    }
    // Drop modules declared under `#[cfg(test)]` (and what is under them), and cut the test
    // items out of the rest: test code may reach anywhere.
    let mut test_only: Vec<Vec<String>> = Vec::new();
    for (module, (_, text)) in found.iter_mut() {
        let (kept, test_children) = without_tests(text);
        *text = kept;
        for child in test_children {
            let mut path = module.clone();
            path.push(child);
            test_only.push(path);
        }
    }
    found.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    found
}

/// `text` without its `#[cfg(test)]` items, and the names of the child modules declared so.
fn without_tests(text: &str) -> (String, Vec<String>) {
    let mut kept = String::new();
    let mut children = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        let Some(item) = lines.next() else { break };
        let decl = item
            .trim()
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            children.push(name.trim().to_owned());
        } else if item.trim_end().ends_with('{') {
            // A block item: skip to its closing brace at the item's own indentation.
            let indent = &item[..item.len() - item.trim_start().len()];
            let close = format!("{indent}}}");
            for rest in lines.by_ref() {
                if rest.trim_end() == close {
                    break;
                }
            }
        }
    }
    (kept, children)
}

/// The identifiers of `text` after each `prefix` (`crate::`, `super::`), with `{a::b, c}`
/// groups expanded to their first segments.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find(prefix) {
        let start = at + i;
        at = start + prefix.len();
        let before = text[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let seg = segments(item.trim());
                if !seg.is_empty() {
                    out.push(seg);
                }
            }
        } else {
            out.push(segments(rest));
        }
    }
    out
}

/// The leading `a::b::c` segments of `text`.
fn segments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        out.push(rest[..len].to_owned());
        match rest[len..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// `text` without comments and without its re-exports (`pub use …;`), and what those
/// re-export: each public name and the path it names, relative to the file's module as
/// written. A re-export is a crate's (or a module's) façade, not code of the file depending
/// on another; an import through it counts as one of the module that defines the item.
fn split_reexports(text: &str) -> (String, Vec<(String, Vec<String>)>) {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut kept = String::new();
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = ["pub use ", "pub(crate) use ", "pub(super) use "]
        .iter()
        .filter_map(|p| rest.find(p).map(|i| (i, p.len())))
        .min()
    {
        let (start, len) = i;
        kept.push_str(&rest[..start]);
        let body = &rest[start + len..];
        let end = body.find(';').unwrap_or(body.len());
        let stmt: String = body[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let (prefix, group) = match stmt.find("::{") {
            Some(b) => (&stmt[..b], stmt[b + 3..].trim_end_matches('}')),
            None => ("", stmt.as_str()),
        };
        for item in group.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (path, alias) = match item.split_once(" as ") {
                Some((p, a)) => (p.trim(), Some(a.trim())),
                None => (item, None),
            };
            let mut full = segments(prefix);
            full.extend(segments(path));
            if let Some(name) = alias.map(str::to_owned).or_else(|| full.last().cloned()) {
                names.push((name, full));
            }
        }
        rest = &body[(end + 1).min(body.len())..];
    }
    kept.push_str(rest);
    (kept, names)
}

/// Which module files each module file of a crate imports (`crate::`, `super::` and child
/// paths), outside tests.
fn imports(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let modules = modules(src);
    // Each module's code without its re-exports, and the absolute path of each re-export.
    let mut code: BTreeMap<&Vec<String>, String> = BTreeMap::new();
    let mut reexports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    for (module, (_, text)) in &modules {
        let (kept, names) = split_reexports(text);
        for (name, path) in names {
            if let Some(abs) = absolute(&modules, module, &path) {
                reexports.insert((module.clone(), name), abs);
            }
        }
        code.insert(module, kept);
    }
    // The module file an absolute path lands in, through re-exports to where the item is.
    let file_of = |path: &[String]| -> Option<&PathBuf> {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let n = (0..=path.len())
                .rev()
                .find(|n| modules.contains_key(&path[..*n]))?;
            let next = path.get(n).cloned();
            match next.and_then(|name| reexports.get(&(path[..n].to_vec(), name))) {
                Some(target) => {
                    let mut to = target.clone();
                    to.extend(path[n + 1..].iter().cloned());
                    path = to;
                }
                None => return modules.get(&path[..n]).map(|(f, _)| f),
            }
        }
        None
    };
    let mut graph = BTreeMap::new();
    for (module, (file, _)) in &modules {
        let text = &code[module];
        let mut targets: Vec<Vec<String>> = Vec::new();
        for prefix in ["crate::", "super::"] {
            for rel in paths_after(text, prefix) {
                let mut path = segments(prefix.trim_end_matches(':'));
                path.extend(rel);
                targets.extend(absolute(&modules, module, &path));
            }
        }
        for (child, _) in modules.range(module.clone()..) {
            if child.len() == module.len() + 1 && child.starts_with(module) {
                let name = &child[module.len()];
                for rel in paths_after(text, &format!("{name}::")) {
                    let mut path = child.clone();
                    path.extend(rel);
                    targets.push(path);
                }
            }
        }
        let mut to = BTreeSet::new();
        for target in targets {
            if let Some(f) = file_of(&target).filter(|f| *f != file) {
                to.insert(f.clone());
            }
        }
        graph.insert(file.clone(), to);
    }
    graph
}

/// `path` as written in `module` (`crate::a::B`, `super::B`, `child::B`) from the crate root;
/// `None` for a path outside the crate.
fn absolute(
    modules: &BTreeMap<Vec<String>, (PathBuf, String)>,
    module: &[String],
    path: &[String],
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => return Some(rest.to_vec()),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        "self" => module.to_vec(),
        _ => {
            let mut child = module.to_vec();
            child.push(first.clone());
            return modules.contains_key(&child).then(|| {
                child.extend(rest.iter().cloned());
                child
            });
        }
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The import cycles of more than two files in `graph`, each as the files it passes through.
/// Two files that import each other (a module and its child) are allowed; three or more in a
/// loop are not.
fn long_cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    let mut cycles = Vec::new();
    for (from, tos) in graph {
        for to in tos {
            // The shortest way back from `to` to `from` without the direct edge back closes the
            // shortest cycle through this edge; one longer than two files is what we forbid.
            let mut prev: BTreeMap<&PathBuf, &PathBuf> = BTreeMap::new();
            let mut queue = VecDeque::from([to]);
            let mut seen = BTreeSet::from([to]);
            while let Some(at) = queue.pop_front() {
                for next in graph.get(at).into_iter().flatten() {
                    if (at == to && next == from) || !seen.insert(next) {
                        continue;
                    }
                    prev.insert(next, at);
                    queue.push_back(next);
                }
            }
            if !seen.contains(from) || from == to {
                continue;
            }
            let mut cycle = vec![from.clone()];
            let mut at = from;
            while let Some(p) = prev.get(at) {
                cycle.push((*p).clone());
                at = p;
            }
            cycle.reverse();
            let mut key = cycle.clone();
            key.sort();
            if cycle.len() > 2
                && !cycles.iter().any(|c: &Vec<PathBuf>| {
                    let mut k = c.clone();
                    k.sort();
                    k == key
                })
            {
                cycles.push(cycle);
            }
        }
    }
    cycles
}

#[test]
fn every_crate_depends_only_on_lower_layers() {
    let packages = packages();
    let deps: Vec<(&str, Vec<&str>)> = packages
        .iter()
        .map(|p| (p.name.as_str(), p.deps.iter().map(String::as_str).collect()))
        .collect();
    let wrong = layering_violations(&deps);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every layer entry is a crate of the workspace.
    for (name, _) in LAYERS {
        assert!(packages.iter().any(|p| p.name == *name), "{name} is gone");
    }
}

/// The SDK `cargo xtask install` ships is exactly the front and every workspace crate it
/// builds on: a crate left out of `SDK_CRATES` breaks every user's hook project build.
#[test]
fn the_installed_sdk_lists_every_crate_the_front_builds_on() {
    let meta = metadata(&super::workspace_root().join("Cargo.toml"));
    let list = meta["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = list.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut need = BTreeSet::from(["captain-hook"]);
    let mut queue = vec!["captain-hook"];
    while let Some(name) = queue.pop() {
        let package = list.iter().find(|p| p["name"] == name).unwrap();
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            // Dev-dependencies are not built for a dependent; normal and build ones are.
            if dep["kind"] != "dev" && names.contains(dep_name) && need.insert(dep_name) {
                queue.push(dep_name);
            }
        }
    }
    let shipped: BTreeSet<&str> = super::SDK_CRATES.iter().copied().collect();
    assert_eq!(shipped, need);
}

#[test]
fn the_layering_check_catches_upward_sideways_and_banned_dependencies() {
    let wrong = layering_violations(&[
        ("capt-hook-engine", vec!["capt-hook-kinds"]),
        ("capt-hook-toml", vec!["capt-hook-testing"]),
        ("capt-hook-client", vec!["capt-hook-shell"]),
        ("capt-hook-new", vec![]),
        ("captain-hook", vec!["capt-hook-serve", "capt-hook-engine"]),
    ]);
    assert_eq!(wrong.len(), 4, "{wrong:#?}");
    assert!(wrong[0].contains("capt-hook-engine (layer 4) depends on capt-hook-kinds"));
    assert!(wrong[1].contains("capt-hook-toml (layer 6) depends on capt-hook-testing"));
    assert!(wrong[2].contains("must never depend on capt-hook-shell"));
    assert!(wrong[3].contains("capt-hook-new has no layer"));
}

/// Cycles of more than two files that predate this check, by crate and the files in them:
/// each is to be untangled, and the test fails when one is gone but still listed, so this
/// list only shrinks. Nothing may be added to it.
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

#[test]
fn no_crate_has_a_module_import_cycle_of_more_than_two_files() {
    let mut wrong = Vec::new();
    let mut known_seen = BTreeSet::new();
    for package in packages() {
        let src = package.dir.join("src");
        if !src.is_dir() {
            continue;
        }
        for cycle in long_cycles(&imports(&src)) {
            let files: Vec<String> = cycle
                .iter()
                .map(|f| f.strip_prefix(&src).unwrap_or(f).display().to_string())
                .collect();
            let known = KNOWN_CYCLES.iter().position(|(name, listed)| {
                *name == package.name && files.iter().all(|f| listed.contains(&f.as_str()))
            });
            match known {
                Some(i) => {
                    known_seen.insert(i);
                }
                None => wrong.push(format!("{}: {}", package.name, files.join(" -> "))),
            }
        }
    }
    for (i, (name, files)) in KNOWN_CYCLES.iter().enumerate() {
        if !known_seen.contains(&i) {
            wrong.push(format!(
                "{name}: {files:?} no longer loop; drop them from KNOWN_CYCLES"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "module import cycles:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_cycle_check_finds_a_loop_of_three_files_and_allows_a_pair() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\nmod d;\n#[cfg(test)]\nmod t;\n",
    );
    write("a.rs", "use crate::b::B;\n");
    write("b.rs", "pub struct B;\nuse crate::{c::C, d};\n");
    write("c.rs", "pub struct C;\nfn f() -> crate::a::A { todo() }\n");
    // A pair is allowed, and test code may import anything.
    write(
        "d/mod.rs",
        "mod e;\npub use e::E;\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
    );
    write("d/e.rs", "pub struct E;\nuse super::D;\n");
    write("t.rs", "use crate::a;\n");
    let graph = imports(src);
    let cycles = long_cycles(&graph);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let names: BTreeSet<String> = cycles[0]
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["a.rs".into(), "b.rs".into(), "c.rs".into()])
    );
    // Without c's import of a, no loop is left.
    write("c.rs", "pub struct C;\n");
    assert!(long_cycles(&imports(src)).is_empty());
}
