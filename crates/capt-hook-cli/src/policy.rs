//! `capt-hook policy status|verify|sums|sign`: the policy packs this machine loads before every
//! project's hooks, and whether their signatures hold.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use captain_hook::packs::policy::{self, Settings, Trust};

/// `capt-hook policy …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum PolicyCommand {
    /// Where policy is looked for, the trusted key, and each pack: signed, unverified (no
    /// trusted key) or refused, with why.
    Status,
    /// As `status`, and exit 1 when a pack is refused (it does not load: the calls its hooks
    /// guard ask).
    Verify,
    /// Print the `SHA256SUMS` of the pack at DIR (pack.toml and its hook files); `sign` writes
    /// it and its signature in one step.
    Sums {
        /// The pack's directory.
        dir: PathBuf,
    },
    /// Sign the pack at DIR: write its `SHA256SUMS` (as `sums` prints it) and
    /// `SHA256SUMS.minisig`, a minisign signature of it made with the secret key FILE (an
    /// encrypted key's password is read from CAPT_HOOK_SIGNING_PASSWORD).
    Sign {
        /// The minisign secret key.
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
        /// The pack's directory.
        dir: PathBuf,
    },
}

/// Runs a `policy` subcommand.
pub fn run(command: &PolicyCommand) -> anyhow::Result<ExitCode> {
    match command {
        PolicyCommand::Status => report(false),
        PolicyCommand::Verify => report(true),
        PolicyCommand::Sums { dir } => sums(dir),
        PolicyCommand::Sign { key, dir } => sign(key, dir),
    }
}

fn report(strict: bool) -> anyhow::Result<ExitCode> {
    let settings = Settings::from_env();
    let mut registry = captain_hook::registry::Registry::new();
    let loaded = policy::load(&settings, &mut registry);
    let mut out = std::io::stdout().lock();
    for dir in &settings.dirs {
        let state = if dir.is_dir() { "" } else { " (not there)" };
        writeln!(out, "policy directory {}{state}", dir.display())?;
    }
    match &settings.key {
        Some(key) => writeln!(out, "trusted key {}", key.display())?,
        None => writeln!(
            out,
            "no trusted key (set {} or install {}): packs load unverified",
            policy::CAPT_HOOK_POLICY_KEY,
            policy::SYSTEM_KEY
        )?,
    }
    if loaded.packs.is_empty() {
        writeln!(out, "no policy packs")?;
    }
    for p in &loaded.packs {
        let (state, why) = match &p.trust {
            Trust::Signed => ("signed", format!("{} hooks", p.hooks)),
            Trust::Unverified => ("unverified", format!("{} hooks", p.hooks)),
            Trust::Refused(e) => ("REFUSED", e.to_string()),
        };
        writeln!(out, "  {:<24} {:<10} {why}", p.id, state)?;
    }
    // Hook files of an accepted pack that fail to load are errors too.
    let broken = loaded
        .errors
        .iter()
        .filter(|e| {
            !loaded
                .packs
                .iter()
                .any(|p| matches!(&p.trust, Trust::Refused(r) if r == *e))
        })
        .collect::<Vec<_>>();
    for e in &broken {
        writeln!(out, "  hook file did not load: {e}")?;
    }
    out.flush()?;
    let refused = loaded
        .packs
        .iter()
        .filter(|p| matches!(p.trust, Trust::Refused(_)))
        .count();
    if strict && (refused > 0 || !broken.is_empty()) {
        eprintln!(
            "capt-hook: {refused} policy pack(s) refused, {} hook file(s) broken: their hooks do not run, and the calls they guard ask",
            broken.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn sums(dir: &Path) -> anyhow::Result<ExitCode> {
    print!("{}", policy::sums(dir)?);
    Ok(ExitCode::SUCCESS)
}

/// Writes the pack's digests and their signature. The key is read first, so a bad key leaves
/// the pack as it was; the signature is written after the digests, each through a new file
/// renamed into place, so a pack is never left with digests its signature does not cover
/// unless the second write fails (then its signature no longer verifies: it fails closed).
fn sign(key: &Path, dir: &Path) -> anyhow::Result<ExitCode> {
    let password = std::env::var(capt_hook_sign::PASSWORD_VAR)
        .ok()
        .filter(|p| !p.is_empty());
    let key = capt_hook_sign::SigningKey::from_file(key, password)?;
    let sums = policy::sums(dir)?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let signature = key.sign(
        sums.as_bytes(),
        &format!("captain-hook policy pack {name} {}", policy::SUMS),
    )?;
    for (file, text) in [(policy::SUMS, &sums), (policy::SIGNATURE, &signature)] {
        let path = dir.join(file);
        let tmp = dir.join(format!(".{file}.new"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "signed {} with minisign key {} ({} files); verify with the public key as {}",
        dir.display(),
        key.key_id(),
        sums.lines().count(),
        policy::CAPT_HOOK_POLICY_KEY
    );
    Ok(ExitCode::SUCCESS)
}
