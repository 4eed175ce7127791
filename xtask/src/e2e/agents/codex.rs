//! The pinned OpenAI Codex CLI: a static binary inside its per-platform npm package, run as
//! `codex exec` with a custom model provider whose base URL is the fake Responses API.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::e2e::npm;

/// The Codex release the suite is written against.
pub const VERSION: &str = "0.169.0";

const PACKAGE: &str = "@openai/codex";

/// The CLI binary, installed into `cache` first unless a working copy of [`VERSION`] is there.
pub fn ensure(cache: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache.join(format!("codex-{VERSION}"));
    let platform = npm::platform()?;
    let triple = match platform {
        "linux-x64" => "x86_64-unknown-linux-musl",
        _ => "aarch64-unknown-linux-musl",
    };
    let vendor = npm::package_dir(&dir, &format!("{PACKAGE}-{platform}"))
        .join("vendor")
        .join(triple);
    let bin = vendor.join("bin/codex");
    npm::ensure(&dir, &format!("{PACKAGE}@{VERSION}"), VERSION, &bin, || {
        let out = Command::new(&bin)
            .arg("--version")
            .env("HOME", &dir)
            .env("CODEX_HOME", dir.join("codex-home"))
            .output()
            .ok()?;
        // "codex-cli 0.169.0"
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace().nth(1).map(str::to_owned)
    })?;
    Ok(bin)
}

/// The fake model's name.
const MODEL: &str = "gpt-e2e";

/// The model catalog Codex reads the fake model's capabilities from (`model_catalog_json`): a
/// model it finds in no catalog gets no edit tool, so `apply_patch` would never be offered.
/// Codex 0.169 knows `apply_patch` only as a freeform tool (the fake sends a scripted call whose
/// input is text as the `custom_tool_call` such a tool gets); `unified_exec` keeps the shell tool `exec_command`, as for an unknown model.
/// The fields are those its parser requires.
fn catalog() -> String {
    serde_json::json!({"models": [{
        "slug": MODEL,
        "display_name": MODEL,
        "base_instructions": "A scripted model of the e2e suite.",
        "supported_reasoning_levels": [],
        "shell_type": "unified_exec",
        "apply_patch_tool_type": "freeform",
        "visibility": "list",
        "supported_in_api": true,
        "priority": 1,
        "support_verbosity": false,
        "truncation_policy": {"mode": "bytes", "limit": 10000},
        "experimental_supported_tools": [],
    }]})
    .to_string()
}

/// The provider configuration: every request to the fake, no retries, nothing else on the
/// network, the model's capabilities from `catalog`; and the project trusted, as a user who
/// opened it in Codex and trusted it has it (Codex ignores an untrusted project's `.codex/`,
/// hooks included, with only a warning). `--strict-config` makes Codex refuse a key it does
/// not know.
fn config(base_url: &str, project: &Path, catalog: &Path) -> String {
    format!(
        "model = \"{MODEL}\"\n\
         model_provider = \"e2e\"\n\
         model_catalog_json = {catalog:?}\n\
         check_for_update_on_startup = false\n\
         \n\
         [model_providers.e2e]\n\
         name = \"e2e fake\"\n\
         base_url = \"{base_url}/v1\"\n\
         wire_api = \"responses\"\n\
         env_key = \"E2E_API_KEY\"\n\
         request_max_retries = 0\n\
         stream_max_retries = 0\n\
         supports_websockets = false\n\
         \n\
         [analytics]\nenabled = false\n\
         \n\
         [feedback]\nenabled = false\n\
         \n\
         [otel]\nexporter = \"none\"\n\
         \n\
         [projects.{project:?}]\ntrust_level = \"trusted\"\n",
        project = project.display().to_string(),
        catalog = catalog.display().to_string()
    )
}

/// The case's `CODEX_HOME`, under its logs so Codex's sessions are kept with them; where
/// `capt-hook install --agent codex` records its trust in our hooks.
pub fn home(logs: &Path) -> PathBuf {
    logs.join("codex-home")
}

/// `codex exec` for one case (`resume`: `codex exec resume --last`, the same session's next
/// prompt): its own `CODEX_HOME` holding the provider config ahead of what install wrote there
/// (the trust in our hooks); approvals and Codex's sandbox off, so only our hooks stand between
/// the model and the shell. Hook trust is not bypassed: the hooks run because install trusted
/// them, as a user's review in Codex would.
pub fn command(
    cli: &Path,
    project: &Path,
    base_url: &str,
    logs: &Path,
    prompt: &str,
    resume: bool,
) -> Result<Command, String> {
    let codex_home = home(logs);
    std::fs::create_dir_all(&codex_home).map_err(|e| format!("{}: {e}", codex_home.display()))?;
    let config_path = codex_home.join("config.toml");
    if !resume {
        let installed = match std::fs::read_to_string(&config_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", config_path.display())),
        };
        let catalog_path = codex_home.join("e2e-models.json");
        std::fs::write(&catalog_path, catalog())
            .map_err(|e| format!("{}: {e}", catalog_path.display()))?;
        // Top-level keys first: install's file holds only tables.
        std::fs::write(
            &config_path,
            format!("{}\n{installed}", config(base_url, project, &catalog_path)),
        )
        .map_err(|e| format!("{}: {e}", config_path.display()))?;
    }
    let mut cmd = Command::new(cli);
    cmd.env_clear()
        .env("CODEX_HOME", &codex_home)
        .env("E2E_API_KEY", "dummy")
        .current_dir(project)
        .arg("exec");
    if resume {
        cmd.arg("resume");
    }
    cmd.args([
        "--json",
        "--strict-config",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]);
    if resume {
        // `resume` runs in the working directory and has no -C.
        cmd.arg("--last");
    } else {
        cmd.arg("-C").arg(project);
    }
    cmd.arg(prompt);
    Ok(cmd)
}
