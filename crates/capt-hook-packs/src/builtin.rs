//! The builtin packs, compiled into every binary that links the SDK. Each pack is a directory
//! under `crates/captain-hook/packs/`; a test checks that this table and those directories agree,
//! so a hook file added there and not here fails the build's tests.

/// One embedded file: its name and text.
pub type File = (&'static str, &'static str);

/// A builtin pack: its name, its `pack.toml`, and its hook files in load order.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The pack's name (its id is `builtin:<name>`).
    pub name: &'static str,
    /// The text of its `pack.toml`.
    pub manifest: &'static str,
    /// Its `hooks/*.toml`, sorted by file name.
    pub hooks: &'static [File],
    /// The same files with their inline tests' lines blanked (`build.rs`): what a worker
    /// loads, since nothing at run time reads the tests and they are most of the text.
    pub runtime: &'static [File],
}

macro_rules! pack {
    ($name:literal, [$($file:literal),* $(,)?]) => {
        Builtin {
            name: $name,
            manifest: include_str!(concat!("../packs/", $name, "/pack.toml")),
            hooks: &[$(($file, include_str!(concat!("../packs/", $name, "/hooks/", $file)))),*],
            runtime: &[$((
                $file,
                include_str!(concat!(env!("OUT_DIR"), "/packs/", $name, "/hooks/", $file)),
            )),*],
        }
    };
}

/// Every builtin pack, in load order: the mandatory guard of the host, the always-on packs,
/// then the language packs.
pub const BUILTINS: &[Builtin] = &[
    pack!("host", ["control.toml"]),
    pack!(
        "general",
        [
            "commands.toml",
            "comments.toml",
            "deletions.toml",
            "detours.toml",
            "docs.toml",
            "hook_files.toml",
            "models.toml",
            "plans.toml",
            "prompts.toml",
            "questions.toml",
            "review.toml",
            "sessions.toml",
            "spawns.toml",
            "stops.toml",
            "tasks.toml",
            "tombstones.toml",
            "tools.toml"
        ]
    ),
    pack!("fixes", ["scratch.toml", "teammate_permissions.toml"]),
    pack!(
        "steering",
        ["steering.toml", "teammates.toml", "workarounds.toml"]
    ),
    pack!("performance", ["filesystem.toml", "resources.toml"]),
    pack!(
        "safety",
        [
            "cloud.toml",
            "containers.toml",
            "databases.toml",
            "filesystem.toml",
            "git.toml",
            "infrastructure.toml",
            "interpreters.toml",
            "kubernetes.toml",
            "publishing.toml"
        ]
    ),
    pack!("go", ["testing.toml"]),
    pack!("python", ["style.toml", "testing.toml"]),
    pack!("rust", ["testing.toml"]),
    pack!("graphite", ["vcs.toml"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_embeds_exactly_the_pack_directories() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("packs");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = BUILTINS.iter().map(|b| b.name.to_owned()).collect();
        listed.sort();
        assert_eq!(
            on_disk, listed,
            "every directory under packs/ is a builtin pack"
        );
        for b in BUILTINS {
            let hooks =
                capt_hook_toml::loader::hook_files(&dir.join(b.name).join("hooks")).unwrap();
            let names: Vec<String> = hooks
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            let embedded: Vec<&str> = b.hooks.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, embedded, "packs/{}/hooks", b.name);
        }
    }
}
