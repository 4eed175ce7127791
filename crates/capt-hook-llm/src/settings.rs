//! Which judge answers: the hook's `backend`, else the project's `CAPT_HOOK_LLM_BACKEND`, else
//! `auto`. The settings are read through a lookup function, so an event that came through the
//! host reads the sender's request-scoped variables rather than the worker's own.

use capt_hook_proto::env::{
    CAPT_HOOK_CLAUDE_BIN, CAPT_HOOK_CLAUDE_MODELS, CAPT_HOOK_CODEX_BIN, CAPT_HOOK_JEV_URL,
    CAPT_HOOK_LLM_BACKEND, CAPT_HOOK_LLM_COMMAND, TYPESAFE_API_KEY,
};

use crate::claude::Claude;
use crate::codex::Codex;
use crate::command::CommandBackend;
use crate::jev::{self, Jev};
use crate::{Backend, VerdictSchema};

/// A judge as a hook or the project names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// Jev when its key is set and it can answer the verdict, else `claude`.
    #[default]
    Auto,
    /// The `claude` CLI.
    Claude,
    /// The `codex` CLI.
    Codex,
    /// `CAPT_HOOK_LLM_COMMAND`.
    Command,
    /// TypeSafe Jev.
    Jev,
}

impl BackendChoice {
    /// Parses `auto`, `claude`, `codex`, `command` or `jev`.
    pub fn parse(text: &str) -> Option<BackendChoice> {
        Some(match text {
            "auto" => BackendChoice::Auto,
            "claude" => BackendChoice::Claude,
            "codex" => BackendChoice::Codex,
            "command" => BackendChoice::Command,
            "jev" => BackendChoice::Jev,
            _ => return None,
        })
    }

    /// The valid names, for error messages.
    pub const NAMES: &'static str = "auto, claude, codex, command, jev";
}

/// What a specialty asks for: a judge and, optionally, its own model names per tier.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Specialty {
    /// The judge (`None`: the hook's or the project's default).
    pub backend: Option<BackendChoice>,
    /// Model names for small, medium and large, for the `claude` and `codex` CLIs.
    pub models: Option<[String; 3]>,
}

/// The specialties a project can name: the built-in ones (which change nothing unless the
/// project configures them) and the project's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specialties {
    table: std::collections::BTreeMap<String, Specialty>,
}

impl Specialties {
    /// Specialties every project has; the seeds' hooks name them.
    pub const BUILTIN: [&'static str; 3] = ["general", "review", "debugging"];

    /// The built-in specialties, each asking for nothing of its own.
    pub fn builtin() -> Specialties {
        Specialties {
            table: Self::BUILTIN
                .iter()
                .map(|n| ((*n).to_owned(), Specialty::default()))
                .collect(),
        }
    }

    /// The built-ins with the project's `configured` ones over them.
    pub fn with(configured: impl IntoIterator<Item = (String, Specialty)>) -> Specialties {
        let mut s = Specialties::builtin();
        s.table.extend(configured);
        s
    }

    /// The specialty called `name`, if the project has it.
    pub fn get(&self, name: &str) -> Option<&Specialty> {
        self.table.get(name)
    }

    /// Every name, sorted, for error messages.
    pub fn names(&self) -> String {
        self.table.keys().cloned().collect::<Vec<_>>().join(", ")
    }
}

impl Default for Specialties {
    fn default() -> Specialties {
        Specialties::builtin()
    }
}

/// Every backend, configured from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The project default.
    pub default: BackendChoice,
    /// The `claude` backend.
    pub claude: Claude,
    /// The `codex` backend.
    pub codex: Codex,
    /// The `command` backend, when a command is set.
    pub command: Option<CommandBackend>,
    /// The Jev backend.
    pub jev: Jev,
}

/// A judge setting that cannot be used; the message names the variable to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// `CAPT_HOOK_LLM_BACKEND` names no judge.
    #[error("{CAPT_HOOK_LLM_BACKEND}={0:?} is not a judge; use one of {names}", names = BackendChoice::NAMES)]
    NotAJudge(String),
    /// `CAPT_HOOK_CLAUDE_MODELS` is not three names.
    #[error("{CAPT_HOOK_CLAUDE_MODELS}={0:?}: give three model names (small,medium,large)")]
    NotThreeModels(String),
    /// The `command` judge was chosen without a command.
    #[error(
        "the `command` judge needs {CAPT_HOOK_LLM_COMMAND} (a command that reads the request on \
         stdin and prints the verdict)"
    )]
    NoCommand,
}

impl Settings {
    /// Reads the settings through `get` (a variable's value, or `None` when unset). A bad
    /// `CAPT_HOOK_LLM_BACKEND` or model list is an error naming the variable.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let default = match get(CAPT_HOOK_LLM_BACKEND) {
            None => BackendChoice::Auto,
            Some(v) => {
                BackendChoice::parse(v.trim()).ok_or_else(|| SettingsError::NotAJudge(v.clone()))?
            }
        };
        let mut claude = Claude::default();
        if let Some(bin) = get(CAPT_HOOK_CLAUDE_BIN) {
            claude.program = bin;
        }
        if let Some(models) = get(CAPT_HOOK_CLAUDE_MODELS) {
            let names: Vec<String> = models.split(',').map(|m| m.trim().to_owned()).collect();
            match <[String; 3]>::try_from(names) {
                Ok(m) if m.iter().all(|n| !n.is_empty()) => claude.models = m,
                _ => return Err(SettingsError::NotThreeModels(models)),
            }
        }
        let mut codex = Codex::default();
        if let Some(bin) = get(CAPT_HOOK_CODEX_BIN) {
            codex.program = bin;
        }
        Ok(Settings {
            default,
            claude,
            codex,
            command: get(CAPT_HOOK_LLM_COMMAND).map(|c| CommandBackend {
                argv: vec!["sh".into(), "-c".into(), c],
            }),
            jev: Jev {
                base_url: get(CAPT_HOOK_JEV_URL).unwrap_or_else(|| jev::DEFAULT_URL.into()),
                api_key: get(TYPESAFE_API_KEY),
            },
        })
    }

    /// These settings under `specialty`: its judge becomes the default, its model names
    /// replace the CLIs'.
    pub fn for_specialty(&self, specialty: &Specialty) -> Settings {
        let mut out = self.clone();
        if let Some(b) = specialty.backend {
            out.default = b;
        }
        if let Some(m) = &specialty.models {
            out.claude.models = m.clone();
            out.codex.models = m.clone();
        }
        out
    }

    /// The backend for a hook that chose `choice` (`None`: the project default) and asks for
    /// verdicts shaped like `schema`. `Err` says why the choice cannot be used.
    pub fn backend(
        &self,
        choice: Option<BackendChoice>,
        schema: &VerdictSchema,
    ) -> Result<&dyn Backend, SettingsError> {
        let choice = choice.unwrap_or(self.default);
        Ok(match choice {
            BackendChoice::Auto => {
                if self.jev.api_key.is_some() && jev::can_answer(schema) {
                    &self.jev
                } else {
                    &self.claude
                }
            }
            BackendChoice::Claude => &self.claude,
            BackendChoice::Codex => &self.codex,
            BackendChoice::Jev => &self.jev,
            BackendChoice::Command => match &self.command {
                Some(c) => c,
                None => return Err(SettingsError::NoCommand),
            },
        })
    }
}

impl Settings {
    /// Why the judge a hook would get cannot run on this machine, if it cannot: the choice is
    /// unusable, or the `claude`/`codex` CLI it would start is neither on `path` (a `PATH`
    /// value) nor at the path given. `None` when the judge can be asked (whether it then
    /// answers is another matter).
    pub fn missing_judge(
        &self,
        choice: Option<BackendChoice>,
        schema: &VerdictSchema,
        path: Option<&std::ffi::OsStr>,
    ) -> Option<String> {
        let backend = match self.backend(choice, schema) {
            Ok(b) => b,
            Err(e) => return Some(e.to_string()),
        };
        let (program, variable) = match backend.name() {
            "claude" => (&self.claude.program, CAPT_HOOK_CLAUDE_BIN),
            "codex" => (&self.codex.program, CAPT_HOOK_CODEX_BIN),
            _ => return None,
        };
        (!runnable(program, path)).then(|| {
            format!(
                "no judge: the {} CLI `{program}` is not on the PATH (install it, set {variable}, \
                 or pick another judge with {CAPT_HOOK_LLM_BACKEND})",
                backend.name()
            )
        })
    }
}

/// True when `program` (a name looked up on `path`, or a path) is an executable file.
fn runnable(program: &str, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    path.is_some_and(|path| std::env::split_paths(path).any(|dir| executable(&dir.join(program))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_judge_whose_cli_is_missing_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("claude");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let schema = VerdictSchema::gate();
        let s = settings(&[]).unwrap();
        assert_eq!(
            s.missing_judge(None, &schema, Some(dir.path().as_os_str())),
            None
        );
        let why = s
            .missing_judge(None, &schema, Some(std::ffi::OsStr::new("/nonexistent")))
            .unwrap();
        assert!(
            why.contains("`claude`") && why.contains(CAPT_HOOK_CLAUDE_BIN),
            "{why}"
        );
        let codex = s
            .missing_judge(Some(BackendChoice::Codex), &schema, None)
            .unwrap();
        assert!(codex.contains("`codex`"), "{codex}");
        // A path given by the variable is checked as a path.
        let pinned = settings(&[(CAPT_HOOK_CLAUDE_BIN, fake.to_str().unwrap())]).unwrap();
        assert_eq!(pinned.missing_judge(None, &schema, None), None);
        // The command judge runs through sh: present whenever a command is set.
        let command = settings(&[(CAPT_HOOK_LLM_COMMAND, "cat")]).unwrap();
        assert_eq!(
            command.missing_judge(Some(BackendChoice::Command), &schema, None),
            None
        );
        assert!(
            s.missing_judge(Some(BackendChoice::Command), &schema, None)
                .is_some()
        );
    }

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn auto_is_jev_with_a_key_else_claude() {
        let gate = VerdictSchema::gate();
        let s = settings(&[]).unwrap();
        assert_eq!(s.backend(None, &gate).unwrap().name(), "claude");
        let s = settings(&[(TYPESAFE_API_KEY, "k")]).unwrap();
        assert_eq!(s.backend(None, &gate).unwrap().name(), "jev");
        // Jev cannot score an open number: auto falls back to the CLI.
        let open = crate::test_support::open_number_schema();
        assert_eq!(s.backend(None, &open).unwrap().name(), "claude");
        assert_eq!(
            s.backend(Some(BackendChoice::Claude), &gate)
                .unwrap()
                .name(),
            "claude"
        );
    }

    #[test]
    fn the_project_default_and_cli_paths_come_from_the_environment() {
        let s = settings(&[
            (CAPT_HOOK_LLM_BACKEND, "codex"),
            (CAPT_HOOK_CLAUDE_BIN, "/opt/claude"),
            (CAPT_HOOK_CLAUDE_MODELS, "a, b ,c"),
        ])
        .unwrap();
        let gate = VerdictSchema::gate();
        assert_eq!(s.backend(None, &gate).unwrap().name(), "codex");
        assert_eq!(s.claude.program, "/opt/claude");
        assert_eq!(s.claude.models, ["a", "b", "c"]);
        let e = s
            .backend(Some(BackendChoice::Command), &gate)
            .err()
            .unwrap();
        assert!(e.to_string().contains(CAPT_HOOK_LLM_COMMAND), "{e}");
        let s = settings(&[(CAPT_HOOK_LLM_COMMAND, "my-judge --x")]).unwrap();
        assert_eq!(
            s.backend(Some(BackendChoice::Command), &gate)
                .unwrap()
                .name(),
            "command"
        );
        // A specialty's judge replaces the project default, not a hook's own choice; its
        // model names replace the CLIs' tiers.
        let review = Specialty {
            backend: Some(BackendChoice::Claude),
            models: Some(["m1".into(), "m2".into(), "m3".into()]),
        };
        let under = s.for_specialty(&review);
        assert_eq!(under.backend(None, &gate).unwrap().name(), "claude");
        assert_eq!(
            under
                .backend(Some(BackendChoice::Command), &gate)
                .unwrap()
                .name(),
            "command"
        );
        assert_eq!(under.claude.models, ["m1", "m2", "m3"]);
        assert_eq!(under.codex.models, ["m1", "m2", "m3"]);
        let plain = s.for_specialty(&Specialty::default());
        assert_eq!(plain.default, s.default);
        let table = Specialties::with([("security".to_owned(), review.clone())]);
        assert_eq!(table.get("security"), Some(&review));
        assert_eq!(table.get("review"), Some(&Specialty::default()));
        assert!(table.get("secruity").is_none());
        assert_eq!(table.names(), "debugging, general, review, security");
        let e = settings(&[(CAPT_HOOK_LLM_BACKEND, "gpt")]).unwrap_err();
        assert!(e.to_string().contains("auto, claude"), "{e}");
        assert!(settings(&[(CAPT_HOOK_CLAUDE_MODELS, "a,b")]).is_err());
    }
}
