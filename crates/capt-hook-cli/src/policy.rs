//! `capt-hook policy status|verify|sums`: the policy packs this machine loads before every
//! project's hooks, and whether their signatures hold.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Print the `SHA256SUMS` of the pack at DIR (pack.toml and its hook files); sign it with
    /// `minisign -Sm SHA256SUMS` to make `SHA256SUMS.minisig`.
    Sums {
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
