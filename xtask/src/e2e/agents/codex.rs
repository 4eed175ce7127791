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

/// The provider configuration: every request to the fake, no retries, nothing else on the
/// network; and the project trusted, as a user who opened it in Codex and trusted it has it
/// (Codex ignores an untrusted project's `.codex/`, hooks included, with only a warning).
/// `--strict-config` makes Codex refuse a key it does not know.
fn config(base_url: &str, project: &Path) -> String {
    format!(
        "model = \"gpt-e2e\"\n\
         model_provider = \"e2e\"\n\
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
        project = project.display().to_string()
    )
}

/// `codex exec` for one case: its own `CODEX_HOME` (under the case's logs, so its sessions are
/// kept with them) holding the provider config; approvals and Codex's sandbox off, so only our
/// hooks stand between the model and the shell. Hook trust is bypassed: Codex trusts a hook by
/// a hash it keeps after a user reviewed it, which a headless run cannot do.
pub fn command(
    cli: &Path,
    project: &Path,
    base_url: &str,
    logs: &Path,
    prompt: &str,
) -> Result<Command, String> {
    let codex_home = logs.join("codex-home");
    std::fs::create_dir_all(&codex_home).map_err(|e| format!("{}: {e}", codex_home.display()))?;
    let config_path = codex_home.join("config.toml");
    std::fs::write(&config_path, config(base_url, project))
        .map_err(|e| format!("{}: {e}", config_path.display()))?;
    let mut cmd = Command::new(cli);
    cmd.env_clear()
        .env("CODEX_HOME", &codex_home)
        .env("E2E_API_KEY", "dummy")
        .current_dir(project)
        .args([
            "exec",
            "--json",
            "--strict-config",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "-C",
        ])
        .arg(project)
        .arg(prompt);
    Ok(cmd)
}
