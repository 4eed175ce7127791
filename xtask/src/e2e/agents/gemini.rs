//! The pinned Google Gemini CLI: its npm bundle run with Node as `gemini -p`, its API base URL
//! pointed at the fake Gemini API.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::e2e::npm;

/// The Gemini CLI release the suite is written against.
pub const VERSION: &str = "0.61.0";

const PACKAGE: &str = "@google/gemini-cli";

/// The CLI's entry script, installed into `cache` first unless a working copy of [`VERSION`]
/// is there.
pub fn ensure(cache: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache.join(format!("gemini-cli-{VERSION}"));
    npm::platform()?;
    let entry = npm::package_dir(&dir, PACKAGE).join("bundle/gemini.js");
    npm::ensure(
        &dir,
        &format!("{PACKAGE}@{VERSION}"),
        VERSION,
        &entry,
        || {
            let out = Command::new("node")
                .arg(&entry)
                .arg("--version")
                .env("HOME", &dir)
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            text.split_whitespace().next().map(str::to_owned)
        },
    )?;
    Ok(entry)
}

/// The user settings every run shares: API-key auth (without it `-p` refuses to start), and
/// no statistics, telemetry, update checks or IDE connection.
fn settings() -> serde_json::Value {
    serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "ide": {"enabled": false}
    })
}

/// `gemini -p` for one case (`resume`: the project's latest session, the same session's next
/// prompt): `--yolo` (only our hooks stand between the model and the shell),
/// the project trusted (headless mode refuses an untrusted folder), the base URL the fake's.
pub fn command(
    cli: &Path,
    home: &Path,
    project: &Path,
    base_url: &str,
    prompt: &str,
    resume: bool,
) -> Result<Command, String> {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("settings.json");
    std::fs::write(&path, settings().to_string())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cmd = Command::new("node");
    cmd.env_clear()
        .env("GOOGLE_GEMINI_BASE_URL", base_url)
        .env("GEMINI_API_KEY", "dummy")
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .current_dir(project)
        .arg(cli)
        .args([
            "-p",
            prompt,
            "--yolo",
            "--output-format",
            "json",
            "-m",
            "gemini-e2e",
        ]);
    if resume {
        // The project's latest session: the same session's next prompt.
        cmd.args(["--resume", "latest"]);
    }
    Ok(cmd)
}
