//! The self-update check: after answering a SessionStart, the host asks the release URL for
//! the latest release, at most once per `HOOKS_UPDATE_INTERVAL_MINUTES` across all sessions
//! (the time of the last check is kept in `update.json` in the host state directory). When the
//! release is newer than this build, the host logs it and adds one notice to the next
//! SessionStart's answer. It never downloads or replaces anything, never delays a reply and
//! never changes a verdict: the check runs detached, and every failure is a log line.
//!
//! The request goes through `curl` (present on macOS and most Linux systems), so the host
//! carries no TLS stack of its own; without `curl` the check logs that and does nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use capt_hook_proto::{BUILD, EventResponse};
use serde::{Deserialize, Serialize};

pub use capt_hook_proto::env::{
    CAPT_HOOK_UPDATE_URL, HOOKS_UPDATE_ENABLED, HOOKS_UPDATE_INTERVAL_MINUTES,
};

/// Where releases are announced unless `CAPT_HOOK_UPDATE_URL` says otherwise.
pub const DEFAULT_URL: &str =
    "https://api.github.com/repos/captain-hook-rs/captain-hook/releases/latest";
/// The record's file name in the host state directory.
pub const RECORD: &str = "update.json";
/// Longest a check may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);

/// What the last check found, kept across hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When the last check started (Unix milliseconds).
    pub checked_at_unix_ms: u64,
    /// The newest release seen, when newer than the build that saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<String>,
    /// The release a session was last told about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<String>,
    /// Why the last check failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The host's side of the check.
pub struct Updater {
    record: PathBuf,
    /// A check is running: a burst of session starts makes one request.
    checking: AtomicBool,
    /// A newer release waits to be told (the SessionStart path reads only this).
    pending: AtomicBool,
    /// Serializes reads and writes of the record.
    lock: Mutex<()>,
}

/// The settings a SessionStart's environment gives: `None` when the check is off.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The release URL.
    pub url: String,
    /// The least time between checks.
    pub interval: Duration,
}

impl Settings {
    /// Reads the request's environment (where `HOOKS_*` and `CAPT_HOOK_*` travel).
    pub fn from_request(env: &BTreeMap<String, String>) -> Option<Settings> {
        let enabled = env
            .get(HOOKS_UPDATE_ENABLED)
            .map(|v| v.trim().to_ascii_lowercase());
        if matches!(enabled.as_deref(), Some("false" | "0" | "no" | "off")) {
            return None;
        }
        let minutes = env
            .get(HOOKS_UPDATE_INTERVAL_MINUTES)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|m| m.is_finite() && *m >= 0.0)
            .unwrap_or(720.0);
        Some(Settings {
            url: env
                .get(CAPT_HOOK_UPDATE_URL)
                .filter(|u| !u.trim().is_empty())
                .cloned()
                .unwrap_or_else(|| DEFAULT_URL.to_owned()),
            interval: Duration::from_secs_f64(minutes * 60.0),
        })
    }
}

impl Updater {
    /// The updater keeping its record in `state_dir`.
    pub fn new(state_dir: &Path) -> Updater {
        let updater = Updater {
            record: state_dir.join(RECORD),
            checking: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            lock: Mutex::new(()),
        };
        let r = updater.read();
        updater
            .pending
            .store(newer_untold(&r).is_some(), Ordering::SeqCst);
        updater
    }

    /// The newer release the last check found, if any.
    pub fn latest(&self) -> Option<String> {
        self.read().latest.filter(|l| is_newer(l, BUILD))
    }

    fn read(&self) -> Record {
        std::fs::read(&self.record)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    fn write(&self, r: &Record) {
        let tmp = self.record.with_extension("json.tmp");
        let written = serde_json::to_vec(r)
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &self.record));
        if let Err(e) = written {
            tracing::warn!(path = %self.record.display(), error = %e, "cannot write the update record");
        }
    }

    /// Starts a check in the background when one is due. Called once a SessionStart's reply
    /// is ready; returns at once (even the look at the record happens in the background).
    pub fn after_session_start(self: &std::sync::Arc<Self>, settings: Option<Settings>) {
        let Some(settings) = settings else { return };
        let me = std::sync::Arc::clone(self);
        tokio::spawn(async move {
            if !me.claim(&settings) {
                return;
            }
            let found = latest_release(&settings.url).await;
            me.checking.store(false, Ordering::SeqCst);
            me.settle(found, &settings.url);
        });
    }

    /// True when a check is due and this caller runs it. The time is recorded before the
    /// request goes out, so other sessions (and hosts) wait a whole interval even when this
    /// check fails.
    fn claim(&self, settings: &Settings) -> bool {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = self.read();
        let now = capt_hook_proto::clock::now_unix_ms();
        let due = now.saturating_sub(r.checked_at_unix_ms) >= settings.interval.as_millis() as u64;
        if !due || self.checking.swap(true, Ordering::SeqCst) {
            return false;
        }
        r.checked_at_unix_ms = now;
        self.write(&r);
        true
    }

    /// Records a check's result and logs it.
    fn settle(&self, found: Result<String, String>, url: &str) {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = self.read();
        match found {
            Ok(latest) if is_newer(&latest, BUILD) => {
                tracing::info!(
                    latest,
                    current = BUILD,
                    "a newer captain-hook release is available; the next session start says so"
                );
                r.latest = Some(latest);
                r.error = None;
            }
            Ok(latest) => {
                tracing::debug!(latest, current = BUILD, "captain-hook is up to date");
                r.latest = None;
                r.error = None;
            }
            Err(e) => {
                tracing::warn!(url, error = %e, "the update check failed");
                r.error = Some(e);
            }
        }
        self.pending
            .store(newer_untold(&r).is_some(), Ordering::SeqCst);
        self.write(&r);
    }

    /// Adds the newer-release notice to a SessionStart answer, once per release. An answer
    /// that is not a JSON object (or not exit 0) is left alone; a later session start tells.
    pub fn tell(&self, response: &mut EventResponse) {
        if !self.pending.load(Ordering::Relaxed) || response.exit != 0 {
            return;
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = self.read();
        let Some(latest) = newer_untold(&r) else {
            self.pending.store(false, Ordering::SeqCst);
            return;
        };
        let notice = format!(
            "captain-hook {latest} is available (this is {BUILD}). Update it the way you \
             installed it (`cargo xtask install` from a checkout), then run `capt-hookd shutdown`."
        );
        if !add_system_message(&mut response.stdout, &notice) {
            return;
        }
        r.notified = Some(latest);
        self.pending.store(false, Ordering::SeqCst);
        self.write(&r);
    }
}

/// The newer release a session has not been told about.
fn newer_untold(r: &Record) -> Option<String> {
    r.latest
        .clone()
        .filter(|l| is_newer(l, BUILD) && r.notified.as_deref() != Some(l))
}

/// Adds `notice` to the top-level `systemMessage` of a JSON answer (every hook answer may
/// carry one; Claude Code shows it to the user). False when the answer is not a JSON object.
pub fn add_system_message(stdout: &mut String, notice: &str) -> bool {
    let mut map = if stdout.trim().is_empty() {
        serde_json::Map::new()
    } else {
        match serde_json::from_str::<serde_json::Value>(stdout) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => return false,
        }
    };
    let joined = match map.get("systemMessage").and_then(|v| v.as_str()) {
        Some(prior) if !prior.is_empty() => format!("{prior}\n\n{notice}"),
        _ => notice.to_owned(),
    };
    map.insert("systemMessage".into(), joined.into());
    *stdout = serde_json::Value::Object(map).to_string() + "\n";
    true
}

/// Asks the release URL for the latest version: `tag_name` (GitHub's releases API) or
/// `version`, with any leading `v` removed.
async fn latest_release(url: &str) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("curl");
    cmd.args([
        "-fsSL",
        "--max-time",
        "10",
        "-H",
        "Accept: application/json",
        "-A",
    ])
    .arg(format!("capt-hookd/{BUILD}"))
    .arg("--")
    .arg(url)
    .stdin(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .kill_on_drop(true);
    let out = tokio::time::timeout(FETCH_TIMEOUT, cmd.output())
        .await
        .map_err(|_| format!("no answer from {url} within {FETCH_TIMEOUT:?}"))?
        .map_err(|e| format!("cannot run curl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "curl {url}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_release(&out.stdout)
}

/// The version a release document names.
pub fn parse_release(body: &[u8]) -> Result<String, String> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("the release document is not JSON: {e}"))?;
    ["tag_name", "version"]
        .iter()
        .find_map(|k| v.get(k).and_then(|t| t.as_str()))
        .map(|t| t.trim().trim_start_matches('v').to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| "the release document names no tag_name or version".to_owned())
}

/// True when version `a` is newer than `b`: dot-separated numbers compared in order; a
/// pre-release (`1.2.0-rc1`) is older than its release.
pub fn is_newer(a: &str, b: &str) -> bool {
    fn key(v: &str) -> (Vec<u64>, bool) {
        let v = v.trim().trim_start_matches('v');
        let (core, pre) = match v.split_once(['-', '+']) {
            Some((c, p)) => (c, !p.is_empty() && v.as_bytes()[c.len()] == b'-'),
            None => (v, false),
        };
        let nums = core.split('.').map(|n| n.parse().unwrap_or(0)).collect();
        (nums, !pre)
    }
    let (mut an, ar) = key(a);
    let (mut bn, br) = key(b);
    let len = an.len().max(bn.len());
    an.resize(len, 0);
    bn.resize(len, 0);
    (an, ar) > (bn, br)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(is_newer("0.10.0", "0.9.9"));
        assert!(is_newer("v1.0.0", "0.1.0"));
        assert!(is_newer("1.2.0", "1.2.0-rc1"));
        assert!(!is_newer("1.2.0-rc1", "1.2.0"));
        assert!(!is_newer("0.1.0", "0.1.0"));
        assert!(!is_newer("0.1", "0.1.0"));
    }

    #[test]
    fn release_documents_and_settings() {
        assert_eq!(parse_release(br#"{"tag_name":"v0.3.1"}"#).unwrap(), "0.3.1");
        assert_eq!(parse_release(br#"{"version":"2.0.0"}"#).unwrap(), "2.0.0");
        assert!(parse_release(b"<html>").is_err());
        assert!(parse_release(b"{}").is_err());
        let env = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            Settings::from_request(&env(&[(HOOKS_UPDATE_ENABLED, "false")])),
            None
        );
        let s = Settings::from_request(&env(&[(HOOKS_UPDATE_INTERVAL_MINUTES, "5")])).unwrap();
        assert_eq!(
            (s.url.as_str(), s.interval),
            (DEFAULT_URL, Duration::from_secs(300))
        );
    }

    #[test]
    fn the_notice_joins_a_json_answer_and_leaves_text_alone() {
        let mut out = String::new();
        assert!(add_system_message(&mut out, "new"));
        assert_eq!(out, "{\"systemMessage\":\"new\"}\n");
        let mut out = "{\"systemMessage\":\"old\",\"x\":1}\n".to_owned();
        assert!(add_system_message(&mut out, "new"));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (v["systemMessage"].as_str(), v["x"].as_i64()),
            (Some("old\n\nnew"), Some(1))
        );
        let mut text = "plain context\n".to_owned();
        assert!(!add_system_message(&mut text, "new"));
        assert_eq!(text, "plain context\n");
    }
}
