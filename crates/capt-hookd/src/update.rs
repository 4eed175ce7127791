//! The self-update check: after answering a SessionStart, the host asks the release URL for
//! the latest release, at most once per `HOOKS_UPDATE_INTERVAL_MINUTES` across all sessions
//! (the time of the last check is kept in `update.json` in the host state directory). When the
//! release is newer than this build (semantic-version precedence), the host logs it and hands
//! one notice to the next SessionStart's worker, which renders it into the answer after the
//! hooks' own ([`capt_hook_proto::EventRequest::notices`]). It never downloads or replaces
//! anything, never delays a reply and never changes a verdict: the check and every read or
//! write of the record run on the blocking pool, off the thread that serves events, and every
//! failure is a log line.
//!
//! The request goes through `ureq` with rustls, the HTTP client the engine already links for
//! its judges, so nothing outside the host has to be installed for it.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use capt_hook_proto::BUILD;
use serde::{Deserialize, Serialize};

pub use capt_hook_proto::env::{
    CAPT_HOOK_UPDATE_URL, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, DISABLE_AUTOUPDATER,
    HOOKS_UPDATE_ENABLED, HOOKS_UPDATE_INTERVAL_MINUTES,
};

/// Claude Code's switches that also turn the check off: a user who told Claude Code to make no
/// traffic it can do without, or not to update itself, expects the same of its hooks' host.
pub const CLAUDE_CODE_SWITCHES: [&str; 2] = [
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
    DISABLE_AUTOUPDATER,
];

/// Where releases are announced unless `CAPT_HOOK_UPDATE_URL` says otherwise.
pub const DEFAULT_URL: &str =
    "https://api.github.com/repos/captain-hook-rs/captain-hook/releases/latest";
/// The record's file name in the host state directory.
pub const RECORD: &str = "update.json";
/// Longest a check may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest release document read (GitHub's is a few KiB, more with long release notes).
const MAX_RELEASE_DOCUMENT: u64 = 1024 * 1024;

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
    /// The newer release no session has been told about: what the SessionStart path reads,
    /// in memory, so it never touches the disk. Taken by the one SessionStart that tells it.
    untold: Mutex<Option<String>>,
    /// Serializes reads and writes of the record (on the blocking pool).
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
    /// Reads the request's environment (where `HOOKS_*`, `CAPT_HOOK_*` and Claude Code's
    /// switches travel); `host_env` is the host's own (one of Claude Code's switches set
    /// there, as a service manager may, turns the check off for every session).
    pub fn from_request(
        env: &BTreeMap<String, String>,
        host_env: impl Fn(&str) -> Option<String>,
    ) -> Option<Settings> {
        // Read as Claude Code reads them: any non-empty value, `0` included, is on.
        let switched_off = |name: &str| {
            env.get(name).is_some_and(|v| !v.is_empty())
                || host_env(name).is_some_and(|v| !v.is_empty())
        };
        if CLAUDE_CODE_SWITCHES.iter().any(|n| switched_off(n)) {
            return None;
        }
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
            untold: Mutex::new(None),
            lock: Mutex::new(()),
        };
        // Once, as the host starts, before it serves anything.
        let r = updater.read();
        *updater.untold() = newer_untold(&r);
        updater
    }

    fn untold(&self) -> parking_lot::MutexGuard<'_, Option<String>> {
        self.untold.lock()
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
    pub fn after_session_start(self: &Arc<Self>, settings: Option<Settings>) {
        let Some(settings) = settings else { return };
        let me = Arc::clone(self);
        // The record's I/O and the blocking HTTP request: on the blocking pool, never on the
        // thread that serves events.
        drop(tokio::task::spawn_blocking(move || {
            if !me.claim(&settings) {
                return;
            }
            let found = latest_release(&settings.url);
            me.checking.store(false, Ordering::SeqCst);
            me.settle(found, &settings.url);
        }));
    }

    /// True when a check is due and this caller runs it. The time is recorded before the
    /// request goes out, so other sessions (and hosts) wait a whole interval even when this
    /// check fails.
    fn claim(&self, settings: &Settings) -> bool {
        let _guard = self.lock.lock();
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
    fn settle(&self, found: Result<String, ReleaseError>, url: &str) {
        let _guard = self.lock.lock();
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
                r.error = Some(e.to_string());
            }
        }
        *self.untold() = newer_untold(&r);
        self.write(&r);
    }

    /// The newer release a SessionStart should tell, taken so that concurrent session starts
    /// tell it once: the caller hands [`notice`] of it to the worker with the event and then
    /// calls [`Updater::told`] with whether the answer carried it.
    pub fn take_untold(&self) -> Option<String> {
        self.untold().take()
    }

    /// After the SessionStart that was handed `latest`: when its answer carried the notice
    /// (`told`), the record says so (on the blocking pool); otherwise a later session start
    /// tells it.
    pub fn told(self: &Arc<Self>, latest: String, told: bool) {
        if !told {
            let mut untold = self.untold();
            if untold.is_none() {
                *untold = Some(latest);
            }
            return;
        }
        let me = Arc::clone(self);
        drop(tokio::task::spawn_blocking(move || {
            let _guard = me.lock.lock();
            let mut r = me.read();
            r.notified = Some(latest);
            me.write(&r);
        }));
    }
}

/// What a session is told about a newer release.
pub fn notice(latest: &str) -> String {
    format!(
        "captain-hook {latest} is available (this is {BUILD}). Update it the way you installed \
         it (`cargo xtask install` from a checkout), then run `capt-hookd shutdown`."
    )
}

/// The newer release a session has not been told about.
fn newer_untold(r: &Record) -> Option<String> {
    r.latest
        .clone()
        .filter(|l| is_newer(l, BUILD) && r.notified.as_deref() != Some(l))
}

/// Why the release check found no version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReleaseError {
    /// The request failed (network, TLS, HTTP status).
    #[error("GET {url}: {source}")]
    Fetch {
        /// The release URL.
        url: String,
        /// The client's error.
        #[source]
        source: ureq::Error,
    },
    /// The body could not be read (or was larger than the limit).
    #[error("reading {url}: {source}")]
    Read {
        /// The release URL.
        url: String,
        /// The client's error.
        #[source]
        source: ureq::Error,
    },
    /// The body is not JSON.
    #[error("the release document is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Neither `tag_name` nor `version` is there.
    #[error("the release document names no tag_name or version")]
    NoVersion,
}

/// Asks the release URL for the latest version: `tag_name` (GitHub's releases API) or
/// `version`, with any leading `v` removed. Blocking: run it on the blocking pool.
fn latest_release(url: &str) -> Result<String, ReleaseError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .user_agent(format!("capt-hookd/{BUILD}"))
        .build()
        .into();
    let mut resp = agent
        .get(url)
        .header("Accept", "application/json")
        .call()
        .map_err(|source| ReleaseError::Fetch {
            url: url.to_owned(),
            source,
        })?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_RELEASE_DOCUMENT)
        .read_to_vec()
        .map_err(|source| ReleaseError::Read {
            url: url.to_owned(),
            source,
        })?;
    parse_release(&body)
}

/// The version a release document names.
pub fn parse_release(body: &[u8]) -> Result<String, ReleaseError> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(ReleaseError::NotJson)?;
    ["tag_name", "version"]
        .iter()
        .find_map(|k| v.get(k).and_then(|t| t.as_str()))
        .map(|t| t.trim().trim_start_matches('v').to_owned())
        .filter(|t| !t.is_empty())
        .ok_or(ReleaseError::NoVersion)
}

/// True when version `a` is newer than `b` by semantic-version precedence (a pre-release such
/// as `1.2.0-rc1` is older than its release; build metadata does not count). A leading `v` is
/// ignored; a version that is not semver is never newer, nor older (logged).
pub fn is_newer(a: &str, b: &str) -> bool {
    let parse = |v: &str| semver::Version::parse(v.trim().trim_start_matches('v'));
    match (parse(a), parse(b)) {
        (Ok(a), Ok(b)) => a.cmp_precedence(&b) == std::cmp::Ordering::Greater,
        (a_parsed, b_parsed) => {
            tracing::debug!(
                a,
                b,
                a_ok = a_parsed.is_ok(),
                b_ok = b_parsed.is_ok(),
                "not a semantic version"
            );
            false
        }
    }
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
        let host = |_: &str| None;
        assert_eq!(
            Settings::from_request(&env(&[(HOOKS_UPDATE_ENABLED, "false")]), host),
            None
        );
        let s =
            Settings::from_request(&env(&[(HOOKS_UPDATE_INTERVAL_MINUTES, "5")]), host).unwrap();
        assert_eq!(
            (s.url.as_str(), s.interval),
            (DEFAULT_URL, Duration::from_secs(300))
        );
    }

    /// Claude Code's switches turn the check off as Claude Code reads them (any non-empty
    /// value, `0` included), from the session's environment or the host's own.
    #[test]
    fn claude_codes_switches_turn_the_check_off() {
        let none = |_: &str| None;
        for name in [
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
            DISABLE_AUTOUPDATER,
        ] {
            for value in ["1", "0", "true"] {
                let env = BTreeMap::from([(name.to_owned(), value.to_owned())]);
                assert_eq!(Settings::from_request(&env, none), None, "{name}={value}");
            }
            let empty = BTreeMap::from([(name.to_owned(), String::new())]);
            assert!(
                Settings::from_request(&empty, none).is_some(),
                "{name} empty"
            );
            let host = |n: &str| (n == name).then(|| "1".to_owned());
            assert_eq!(
                Settings::from_request(&BTreeMap::new(), host),
                None,
                "{name} in the host's environment"
            );
            // The switch travels with the session's request to the host.
            assert!(capt_hook_proto::is_request_env(name), "{name}");
        }
        assert!(Settings::from_request(&BTreeMap::new(), none).is_some());
    }

    #[test]
    fn versions_that_are_not_semver_are_never_newer() {
        assert!(!is_newer("1.2", "1.0.0"));
        assert!(!is_newer("latest", "1.0.0"));
        assert!(
            !is_newer("1.0.0+b", "1.0.0+a"),
            "build metadata has no precedence"
        );
        assert!(
            is_newer("1.0.0-rc.10", "1.0.0-rc.9"),
            "numeric pre-release parts"
        );
    }

    /// The notice is told once however many sessions start together, and again after an
    /// answer that could not carry it; the record remembers who was told, off the runtime
    /// thread.
    #[tokio::test]
    async fn a_newer_release_is_told_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(RECORD),
            r#"{"checked_at_unix_ms":1,"latest":"999.0.0"}"#,
        )
        .unwrap();
        let updater = Arc::new(Updater::new(dir.path()));
        let latest = updater.take_untold().unwrap();
        assert_eq!(latest, "999.0.0");
        assert!(notice(&latest).contains("captain-hook 999.0.0 is available"));
        assert_eq!(
            updater.take_untold(),
            None,
            "a second session start is not told"
        );
        updater.told(latest.clone(), false);
        let latest = updater.take_untold().unwrap();
        updater.told(latest, true);
        assert_eq!(updater.take_untold(), None);
        let record = dir.path().join(RECORD);
        for _ in 0..200 {
            let r: Record = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
            if r.notified.as_deref() == Some("999.0.0") {
                assert!(
                    Updater::new(dir.path()).take_untold().is_none(),
                    "nor a new host"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the record never said the release was told");
    }

    /// The check asks the URL over HTTP (no `curl`) and keeps what it found.
    #[tokio::test]
    async fn the_check_reads_the_release_over_http() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/latest", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut req = [0u8; 4096];
            let n = conn.read(&mut req).unwrap();
            let body = r#"{"tag_name":"v999.1.0"}"#;
            write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            String::from_utf8_lossy(&req[..n]).into_owned()
        });
        assert_eq!(
            tokio::task::spawn_blocking({
                let url = url.clone();
                move || latest_release(&url)
            })
            .await
            .unwrap()
            .ok(),
            Some("999.1.0".to_owned())
        );
        let request = server.join().unwrap();
        assert!(request.starts_with("GET /latest "), "{request}");
        assert!(
            request
                .to_ascii_lowercase()
                .contains("user-agent: capt-hookd/"),
            "{request}"
        );

        let dir = tempfile::tempdir().unwrap();
        let updater = Arc::new(Updater::new(dir.path()));
        updater.settle(Ok("999.1.0".into()), &url);
        assert_eq!(updater.latest().as_deref(), Some("999.1.0"));
        assert_eq!(updater.take_untold().as_deref(), Some("999.1.0"));
    }
}
