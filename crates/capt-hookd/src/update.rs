//! The self-update check: after answering a SessionStart, the host reads the release manifest
//! `install.sh` trusts, at most once per `HOOKS_UPDATE_INTERVAL_MINUTES` across all sessions
//! (the time of the last check is kept in `update.json` in the host state directory). The
//! release is a directory (`CAPT_HOOK_UPDATE_URL`: an `http(s)://` URL, a `file://` URL or a
//! path) holding `SHA256SUMS`, its minisign signature and `manifest.json`, as `cargo xtask
//! release` writes it. The host trusts it as `install.sh` does: the signature over
//! `SHA256SUMS` with the trusted release key (`CAPT_HOOK_RELEASE_PUBKEY`, else the key
//! `install.sh` verified the install with), then the manifest's digest; only then is the
//! manifest's version read. Without a trusted key no request is made. A release that does not
//! verify is never trusted: it is logged, kept in the record and told to one session.
//!
//! When the release is newer than this build (semantic-version precedence), the host hands one
//! notice to the next SessionStart's worker, naming the version and the command that upgrades
//! (the installed `install.sh` with the same key and source), which the worker renders into the
//! answer after the hooks' own ([`capt_hook_proto::EventRequest::notices`]). It never downloads
//! an archive or replaces anything, never delays a reply and never changes a verdict: the check
//! and every read or write of the record run on the blocking pool, off the thread that serves
//! events, and every failure is a log line.
//!
//! The requests go through `ureq` with rustls, the HTTP client the engine already links for
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
    CAPT_HOOK_RELEASE_PUBKEY, CAPT_HOOK_UPDATE_URL, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
    DISABLE_AUTOUPDATER, HOOKS_UPDATE_ENABLED, HOOKS_UPDATE_INTERVAL_MINUTES,
};
use sha2::Digest as _;

/// Claude Code's switches that also turn the check off: a user who told Claude Code to make no
/// traffic it can do without, or not to update itself, expects the same of its hooks' host.
pub const CLAUDE_CODE_SWITCHES: [&str; 2] = [
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC,
    DISABLE_AUTOUPDATER,
];

/// The release read unless `CAPT_HOOK_UPDATE_URL` says otherwise: the files of the
/// repository's latest GitHub release (GitHub redirects to the newest tag's).
pub const DEFAULT_URL: &str =
    "https://github.com/captain-hook-rs/captain-hook/releases/latest/download";
/// The signed digests of a release (the same names `cargo xtask release` writes).
pub const SUMS: &str = "SHA256SUMS";
/// Their minisign signature.
pub const SIGNATURE: &str = "SHA256SUMS.minisig";
/// The release manifest (its `version` is what the check reads).
pub const MANIFEST: &str = "manifest.json";
/// In the install directory: the public key `install.sh` verified the install with, which the
/// check trusts when `CAPT_HOOK_RELEASE_PUBKEY` is unset.
pub const INSTALLED_KEY: &str = "release.pub";
/// In the install directory: the `install.sh` the install shipped, which the notice names.
pub const INSTALLED_SCRIPT: &str = "install.sh";
/// The record's file name in the host state directory.
pub const RECORD: &str = "update.json";
/// Longest a check may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest release file read (the manifest lists every file of every archive: tens of KiB).
const MAX_RELEASE_DOCUMENT: u64 = 4 * 1024 * 1024;

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
    /// The command that upgrades to `latest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<String>,
    /// Why the last release read was not trusted (a signature or digest that does not verify),
    /// while it still holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The refusal a session was last told about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal_told: Option<String>,
}

/// What a SessionStart is handed to tell.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A newer release, and the command that installs it.
    Newer {
        /// Its version.
        version: String,
        /// How to upgrade.
        upgrade: String,
    },
    /// The release read did not verify: not trusted.
    Refused(String),
}

impl Notice {
    /// The line the session sees.
    pub fn text(&self) -> String {
        match self {
            Notice::Newer { version, upgrade } => format!(
                "captain-hook {version} is available (this is {BUILD}). To upgrade, run in your \
                 terminal: {upgrade}"
            ),
            Notice::Refused(why) => format!(
                "captain-hook's release check did not trust what it read, and ignored it: {why}"
            ),
        }
    }
}

/// The host's side of the check.
pub struct Updater {
    record: PathBuf,
    /// A check is running: a burst of session starts makes one request.
    checking: AtomicBool,
    /// What no session has been told about: what the SessionStart path reads, in memory, so
    /// it never touches the disk. Taken by the one SessionStart that tells it.
    untold: Mutex<Option<Notice>>,
    /// Serializes reads and writes of the record (on the blocking pool).
    lock: Mutex<()>,
}

/// The settings a SessionStart's environment gives: `None` when the check is off.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The release directory's URL (or path).
    pub url: String,
    /// The least time between checks.
    pub interval: Duration,
    /// `CAPT_HOOK_RELEASE_PUBKEY` from the session or the host; the installed key file is
    /// looked for by the check itself, off the serving thread.
    pub key: Option<String>,
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
            key: env
                .get(CAPT_HOOK_RELEASE_PUBKEY)
                .cloned()
                .or_else(|| host_env(CAPT_HOOK_RELEASE_PUBKEY))
                .filter(|k| !k.trim().is_empty()),
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

    fn untold(&self) -> parking_lot::MutexGuard<'_, Option<Notice>> {
        self.untold.lock()
    }

    /// The newer release the last check found, if any.
    pub fn latest(&self) -> Option<String> {
        self.read().latest.filter(|l| is_newer(l, BUILD))
    }

    /// Why the last release read was not trusted, while that holds.
    pub fn refused(&self) -> Option<String> {
        self.read().refused
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
            let found = check(&settings, &capt_hook_proto::paths::home());
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
    fn settle(&self, found: Result<Found, ReleaseError>, url: &str) {
        let _guard = self.lock.lock();
        let mut r = self.read();
        match found {
            Ok(found) if is_newer(&found.version, BUILD) => {
                tracing::info!(
                    latest = found.version,
                    current = BUILD,
                    "a newer captain-hook release is available (verified); the next session start says so"
                );
                r.latest = Some(found.version);
                r.upgrade = Some(found.upgrade);
                r.error = None;
                r.refused = None;
            }
            Ok(found) => {
                tracing::debug!(
                    latest = found.version,
                    current = BUILD,
                    "captain-hook is up to date"
                );
                r.latest = None;
                r.upgrade = None;
                r.error = None;
                r.refused = None;
            }
            Err(e) if e.is_untrusted() => {
                tracing::warn!(url, error = %e, "the release check refused what it read: not trusted");
                r.error = Some(e.to_string());
                r.refused = Some(e.to_string());
            }
            Err(e) => {
                tracing::warn!(url, error = %e, "the update check failed");
                r.error = Some(e.to_string());
            }
        }
        *self.untold() = newer_untold(&r);
        self.write(&r);
    }

    /// What a SessionStart should tell, taken so that concurrent session starts tell it once:
    /// the caller hands [`Notice::text`] to the worker with the event and then calls
    /// [`Updater::told`] with whether the answer carried it.
    pub fn take_untold(&self) -> Option<Notice> {
        self.untold().take()
    }

    /// After the SessionStart that was handed `notice`: when its answer carried it (`told`),
    /// the record says so (on the blocking pool); otherwise a later session start tells it.
    pub fn told(self: &Arc<Self>, notice: Notice, told: bool) {
        if !told {
            let mut untold = self.untold();
            if untold.is_none() {
                *untold = Some(notice);
            }
            return;
        }
        let me = Arc::clone(self);
        drop(tokio::task::spawn_blocking(move || {
            let _guard = me.lock.lock();
            let mut r = me.read();
            match notice {
                Notice::Newer { version, .. } => r.notified = Some(version),
                Notice::Refused(why) => r.refusal_told = Some(why),
            }
            me.write(&r);
        }));
    }
}

/// What no session has been told about: a newer release first, else a refusal.
fn newer_untold(r: &Record) -> Option<Notice> {
    let newer = r
        .latest
        .clone()
        .filter(|l| is_newer(l, BUILD) && r.notified.as_deref() != Some(l));
    if let Some(version) = newer {
        // A record from before the check named the command: the way an install from a
        // checkout upgrades.
        let upgrade = r
            .upgrade
            .clone()
            .unwrap_or_else(|| "`cargo xtask install` from a checkout".to_owned());
        return Some(Notice::Newer { version, upgrade });
    }
    r.refused
        .clone()
        .filter(|why| r.refusal_told.as_deref() != Some(why))
        .map(Notice::Refused)
}

/// Why the release check found no version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReleaseError {
    /// No key to verify a release with: nothing is asked.
    #[error(
        "no trusted release key: set {CAPT_HOOK_RELEASE_PUBKEY} (a minisign public key file or its \
         base64 line) or install with install.sh, which keeps its key in {0}"
    )]
    NoTrustedKey(String),
    /// The trusted key is not a minisign public key.
    #[error("the trusted release key {origin} is not a minisign public key: {message}")]
    BadKey {
        /// Where the key came from.
        origin: String,
        /// The decoder's complaint.
        message: String,
    },
    /// The request failed (network, TLS, HTTP status).
    #[error("GET {url}: {source}")]
    Fetch {
        /// The file's URL.
        url: String,
        /// The client's error.
        #[source]
        source: Box<ureq::Error>,
    },
    /// A local release file could not be read.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The signature is not a minisign signature: the release is unsigned.
    #[error("{url} is not a minisign signature ({message}): the release is unsigned")]
    Unsigned {
        /// The signature's URL.
        url: String,
        /// The decoder's complaint.
        message: String,
    },
    /// The signature does not verify the digests with the trusted key.
    #[error(
        "{url} does not verify {SUMS} with the trusted release key ({message}): the release was \
         altered or signed by another key"
    )]
    BadSignature {
        /// The signature's URL.
        url: String,
        /// The verifier's complaint.
        message: String,
    },
    /// The manifest is not what the signed digests say.
    #[error("{url} was changed: its sha256 is {got}, the signed {SUMS} says {want}")]
    Altered {
        /// The manifest's URL.
        url: String,
        /// Its digest.
        got: String,
        /// The signed digest (`none` when it is not listed).
        want: String,
    },
    /// The manifest is not JSON.
    #[error("the release manifest is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The manifest names no version.
    #[error("the release manifest names no version")]
    NoVersion,
}

impl ReleaseError {
    /// True when what was read did not verify (as opposed to not being read at all): the
    /// session is told, since someone may be serving a forged release.
    pub fn is_untrusted(&self) -> bool {
        matches!(
            self,
            ReleaseError::Unsigned { .. }
                | ReleaseError::BadSignature { .. }
                | ReleaseError::Altered { .. }
        )
    }
}

/// A verified release.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The manifest's version.
    pub version: String,
    /// The command that installs it.
    pub upgrade: String,
}

/// Where the release's files are read from.
enum Source {
    Http(String),
    Dir(PathBuf),
}

impl Source {
    fn new(url: &str) -> Source {
        let url = url.trim();
        if url.starts_with("http://") || url.starts_with("https://") {
            Source::Http(url.trim_end_matches('/').to_owned())
        } else {
            Source::Dir(PathBuf::from(url.strip_prefix("file://").unwrap_or(url)))
        }
    }

    /// Where `name` is, as messages name it.
    fn name(&self, name: &str) -> String {
        match self {
            Source::Http(base) => format!("{base}/{name}"),
            Source::Dir(dir) => dir.join(name).display().to_string(),
        }
    }

    /// The release as `install.sh` takes it.
    fn for_install(&self) -> String {
        match self {
            Source::Http(base) => base.clone(),
            Source::Dir(dir) => dir.display().to_string(),
        }
    }

    fn read(&self, agent: &ureq::Agent, name: &str) -> Result<Vec<u8>, ReleaseError> {
        let url = self.name(name);
        match self {
            Source::Dir(_) => {
                let read = std::fs::File::open(&url).and_then(|f| {
                    use std::io::Read as _;
                    let mut bytes = Vec::new();
                    f.take(MAX_RELEASE_DOCUMENT).read_to_end(&mut bytes)?;
                    Ok(bytes)
                });
                read.map_err(|source| ReleaseError::ReadFile { path: url, source })
            }
            Source::Http(_) => {
                let fetch = |source| ReleaseError::Fetch {
                    url: url.clone(),
                    source: Box::new(source),
                };
                let mut resp = agent.get(&url).call().map_err(fetch)?;
                resp.body_mut()
                    .with_config()
                    .limit(MAX_RELEASE_DOCUMENT)
                    .read_to_vec()
                    .map_err(fetch)
            }
        }
    }
}

/// The trusted key and how `install.sh --pubkey` is given it (a file, or the base64 line):
/// `CAPT_HOOK_RELEASE_PUBKEY`, else the key file the install kept under `home`.
fn trusted_key(
    settings: &Settings,
    home: &Path,
) -> Result<(minisign_verify::PublicKey, String), ReleaseError> {
    let (text, origin, file) = match &settings.key {
        Some(k) if Path::new(k.trim()).is_file() => {
            let path = PathBuf::from(k.trim());
            let text = std::fs::read_to_string(&path).map_err(|e| ReleaseError::BadKey {
                origin: path.display().to_string(),
                message: e.to_string(),
            })?;
            (text, path.display().to_string(), Some(path))
        }
        Some(k) => (k.clone(), CAPT_HOOK_RELEASE_PUBKEY.to_owned(), None),
        None => {
            let path = capt_hook_proto::paths::install_dir(home).join(INSTALLED_KEY);
            match std::fs::read_to_string(&path) {
                Ok(text) => (text, path.display().to_string(), Some(path)),
                Err(_) => return Err(ReleaseError::NoTrustedKey(path.display().to_string())),
            }
        }
    };
    // A key file's second line, or the base64 line itself (as install.sh reads it).
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
        .unwrap_or_default();
    let key = minisign_verify::PublicKey::from_base64(line).map_err(|e| ReleaseError::BadKey {
        origin,
        message: e.to_string(),
    })?;
    // Named in the command the user runs in their own terminal, where the session's
    // variable may not be set.
    let given = file.map_or_else(|| line.to_owned(), |f| f.display().to_string());
    Ok((key, given))
}

/// Reads the release `settings` name and trusts it as `install.sh` does; `home` is the user's
/// (where the install keeps its key and script). Blocking: run it on the blocking pool.
pub fn check(settings: &Settings, home: &Path) -> Result<Found, ReleaseError> {
    // The key before any request: without one nothing could be trusted, so nothing is asked.
    let (key, key_given) = trusted_key(settings, home)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .user_agent(format!("capt-hookd/{BUILD}"))
        .build()
        .into();
    let source = Source::new(&settings.url);
    let sums = source.read(&agent, SUMS)?;
    let sig = source.read(&agent, SIGNATURE)?;
    let sig_url = source.name(SIGNATURE);
    let signature =
        minisign_verify::Signature::decode(&String::from_utf8_lossy(&sig)).map_err(|e| {
            ReleaseError::Unsigned {
                url: sig_url.clone(),
                message: e.to_string(),
            }
        })?;
    key.verify(&sums, &signature, false)
        .map_err(|e| ReleaseError::BadSignature {
            url: sig_url,
            message: e.to_string(),
        })?;
    let manifest = source.read(&agent, MANIFEST)?;
    let got: String = sha2::Sha256::digest(&manifest)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = signed_digest(&String::from_utf8_lossy(&sums), MANIFEST);
    if want.as_deref() != Some(got.as_str()) {
        return Err(ReleaseError::Altered {
            url: source.name(MANIFEST),
            got,
            want: want.unwrap_or_else(|| "none".to_owned()),
        });
    }
    let version = parse_manifest(&manifest)?;
    let script = capt_hook_proto::paths::install_dir(home).join(INSTALLED_SCRIPT);
    let upgrade = format!(
        "`sh {} --pubkey {} {}`",
        shell_word(&script.display().to_string()),
        shell_word(&key_given),
        shell_word(&source.for_install())
    );
    Ok(Found { version, upgrade })
}

/// The digest `SHA256SUMS` lists for `name` (`<hex>  <name>` lines).
fn signed_digest(sums: &str, name: &str) -> Option<String> {
    sums.lines().find_map(|l| {
        let (digest, file) = l.split_once("  ")?;
        (file == name && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| digest.to_ascii_lowercase())
    })
}

/// `s` quoted for a POSIX shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._:~+=@%,".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The version a (verified) release manifest names, any leading `v` removed.
pub fn parse_manifest(body: &[u8]) -> Result<String, ReleaseError> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(ReleaseError::NotJson)?;
    v.get("version")
        .and_then(|t| t.as_str())
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
        assert_eq!(parse_manifest(br#"{"version":"v0.3.1"}"#).unwrap(), "0.3.1");
        assert_eq!(parse_manifest(br#"{"version":"2.0.0"}"#).unwrap(), "2.0.0");
        assert!(parse_manifest(b"<html>").is_err());
        assert!(parse_manifest(br#"{"tag_name":"v1.0.0"}"#).is_err());
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
        assert!(
            matches!(&latest, Notice::Newer { version, .. } if version == "999.0.0"),
            "{latest:?}"
        );
        assert!(latest.text().contains("captain-hook 999.0.0 is available"));
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

    /// A release as `cargo xtask release` signs it (the files the check reads), in `dir`,
    /// signed with the repository's test key.
    fn signed_release(dir: &Path, version: &str) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/release-key");
        let key = capt_hook_sign::SigningKey::from_file(&root.join("test.key"), None).unwrap();
        std::fs::create_dir_all(dir).unwrap();
        let manifest =
            format!("{{\n  \"name\": \"captain-hook\",\n  \"version\": \"{version}\"\n}}\n");
        std::fs::write(dir.join(MANIFEST), &manifest).unwrap();
        let sums = capt_hook_sign::sums([(MANIFEST, manifest.as_bytes())]);
        std::fs::write(dir.join(SUMS), &sums).unwrap();
        let sig = key.sign(sums.as_bytes(), "test release").unwrap();
        std::fs::write(dir.join(SIGNATURE), sig).unwrap();
    }

    fn test_pub() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/release-key/test.pub")
    }

    fn settings(url: &str, key: Option<&str>) -> Settings {
        Settings {
            url: url.to_owned(),
            interval: Duration::ZERO,
            key: key.map(str::to_owned),
        }
    }

    /// A release directory read as a `file://` URL: verified with the key install.sh kept, the
    /// manifest's version found, and the command that upgrades names the installed script, the
    /// key and the source.
    #[test]
    fn a_signed_release_is_read_and_the_upgrade_named() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("release");
        signed_release(&release, "999.2.0");
        let home = dir.path().join("home");
        let share = capt_hook_proto::paths::install_dir(&home);
        std::fs::create_dir_all(&share).unwrap();
        std::fs::copy(test_pub(), share.join(INSTALLED_KEY)).unwrap();
        let url = format!("file://{}", release.display());
        let found = check(&settings(&url, None), &home).unwrap();
        assert_eq!(found.version, "999.2.0");
        assert_eq!(
            found.upgrade,
            format!(
                "`sh {} --pubkey {} {}`",
                share.join(INSTALLED_SCRIPT).display(),
                share.join(INSTALLED_KEY).display(),
                release.display()
            )
        );
        // The key as the variable's base64 line: named as it is, since the user's terminal
        // may not have the session's variable.
        let line = std::fs::read_to_string(test_pub()).unwrap();
        let line = line.lines().nth(1).unwrap();
        let found = check(&settings(release.to_str().unwrap(), Some(line)), &home).unwrap();
        assert_eq!(found.version, "999.2.0");
        assert!(
            found.upgrade.contains(&format!(" --pubkey {line} ")),
            "{}",
            found.upgrade
        );
    }

    /// Unsigned, re-signed by another key, or a manifest changed after signing: refused and
    /// reported (untrusted), never read. No key: an error before anything is read.
    #[test]
    fn an_unsigned_or_altered_release_is_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let key = test_pub().display().to_string();
        let fresh = |name: &str| {
            let release = dir.path().join(name);
            signed_release(&release, "999.3.0");
            release
        };

        let altered = fresh("altered");
        std::fs::write(
            altered.join(MANIFEST),
            r#"{"name":"captain-hook","version":"999.9.9"}"#,
        )
        .unwrap();
        let e = check(&settings(altered.to_str().unwrap(), Some(&key)), &home).unwrap_err();
        assert!(e.is_untrusted(), "{e}");
        assert!(e.to_string().contains("manifest.json was changed"), "{e}");

        let unsigned = fresh("unsigned");
        std::fs::write(unsigned.join(SIGNATURE), "not a signature\n").unwrap();
        let e = check(&settings(unsigned.to_str().unwrap(), Some(&key)), &home).unwrap_err();
        assert!(
            e.is_untrusted() && e.to_string().contains("unsigned"),
            "{e}"
        );

        let sums_changed = fresh("sums");
        let mut sums = std::fs::read_to_string(sums_changed.join(SUMS)).unwrap();
        sums.push_str(&format!("{}  extra\n", "0".repeat(64)));
        std::fs::write(sums_changed.join(SUMS), sums).unwrap();
        let e = check(&settings(sums_changed.to_str().unwrap(), Some(&key)), &home).unwrap_err();
        assert!(
            e.is_untrusted() && e.to_string().contains("altered or signed by another key"),
            "{e}"
        );

        // Another key: a fresh pair's public half is trusted, the release is the test key's.
        let other = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3";
        let good = fresh("good");
        let e = check(&settings(good.to_str().unwrap(), Some(other)), &home).unwrap_err();
        assert!(e.is_untrusted(), "{e}");

        // No key anywhere: nothing is read (the URL would not even resolve).
        let e = check(&settings("http://256.0.0.1/none", None), &home).unwrap_err();
        assert!(matches!(e, ReleaseError::NoTrustedKey(_)), "{e}");
        assert!(!e.is_untrusted());

        // A refusal is kept and told to one session, then not again.
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        let updater = Arc::new(Updater::new(&state));
        let why = check(&settings(altered.to_str().unwrap(), Some(&key)), &home).unwrap_err();
        updater.settle(Err(why), "altered");
        assert!(
            updater.latest().is_none(),
            "a refused release is not a newer one"
        );
        assert!(updater.refused().unwrap().contains("was changed"));
        let told = updater.take_untold().unwrap();
        assert!(
            matches!(&told, Notice::Refused(w) if w.contains("was changed")),
            "{told:?}"
        );
        assert!(told.text().contains("did not trust"), "{}", told.text());
        assert_eq!(updater.take_untold(), None);
    }

    /// The check asks the release directory over HTTP (no `curl`): a loopback server serves a
    /// signed release, and what it found is kept.
    #[tokio::test]
    async fn the_check_reads_the_release_over_http() {
        use std::io::{BufRead as _, Write as _};
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("release");
        signed_release(&release, "999.1.0");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/rel", listener.local_addr().unwrap());
        let served = release.clone();
        let server = std::thread::spawn(move || {
            let mut requests = Vec::new();
            for _ in 0..3 {
                let (conn, _) = listener.accept().unwrap();
                let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let mut agent = String::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) <= 2 {
                        break;
                    }
                    if h.to_ascii_lowercase().starts_with("user-agent:") {
                        agent = h.trim().to_owned();
                    }
                }
                let name = line.split(' ').nth(1).unwrap().trim_start_matches("/rel/");
                let body = std::fs::read(served.join(name)).unwrap();
                let mut conn = conn;
                write!(
                    conn,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                )
                .unwrap();
                conn.write_all(&body).unwrap();
                requests.push((line.trim().to_owned(), agent));
            }
            requests
        });
        let s = settings(&url, Some(test_pub().to_str().unwrap()));
        let home = dir.path().join("home");
        let found = tokio::task::spawn_blocking(move || check(&s, &home))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.version, "999.1.0");
        assert!(
            found.upgrade.ends_with(&format!(" {url}`")),
            "{}",
            found.upgrade
        );
        let requests = server.join().unwrap();
        let lines: Vec<&str> = requests.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            lines,
            [
                "GET /rel/SHA256SUMS HTTP/1.1",
                "GET /rel/SHA256SUMS.minisig HTTP/1.1",
                "GET /rel/manifest.json HTTP/1.1"
            ]
        );
        assert!(
            requests
                .iter()
                .all(|(_, a)| a.to_ascii_lowercase().contains("capt-hookd/")),
            "{requests:?}"
        );

        let state = tempfile::tempdir().unwrap();
        let updater = Arc::new(Updater::new(state.path()));
        updater.settle(Ok(found.clone()), &url);
        assert_eq!(updater.latest().as_deref(), Some("999.1.0"));
        let told = updater.take_untold().unwrap();
        assert!(
            told.text().contains("captain-hook 999.1.0 is available")
                && told.text().contains(&found.upgrade),
            "{}",
            told.text()
        );
    }
}
