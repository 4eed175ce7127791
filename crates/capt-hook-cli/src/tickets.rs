//! `capt-hook tickets list|revoke`: the user's view of the project's permission tickets.

use std::path::Path;
use std::process::ExitCode;

use captain_hook::state::tickets::{Revoked, Ticket, TicketStore, utc_time};
use clap::Subcommand;

/// What to do with the ticket store.
#[derive(Debug, Subcommand)]
pub enum TicketsCommand {
    /// List the project's live tickets (with --all, expired and revoked ones too).
    List {
        /// Include expired and revoked tickets.
        #[arg(long)]
        all: bool,
        /// Print one JSON object per ticket.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a ticket by its id: later actions it covered are checked again. The ticket stays
    /// listed (`--all`) as revoked.
    Revoke {
        /// The ticket's twelve-hex id (from `capt-hook tickets list`).
        id: String,
    },
}

fn describe(t: &Ticket, now: u64) -> String {
    let place: Vec<String> = t.place.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let expires = match (t.revoked_at, t.expires_at) {
        (Some(r), _) => format!("revoked {}", utc_time(r)),
        (None, Some(e)) if e <= now => format!("expired {}", utc_time(e)),
        (None, Some(e)) => format!("until {}", utc_time(e)),
        (None, None) => "until revoked".to_owned(),
    };
    let mut out = format!(
        "{}  {}  {}  reach={}  rule={}  tree={}  by={}  minted {}  {expires}\n",
        t.id,
        t.kind,
        place.join(","),
        t.reach.name(),
        t.rule,
        t.tree.as_deref().unwrap_or("-"),
        t.author.as_deref().unwrap_or("-"),
        utc_time(t.minted_at),
    );
    for e in &t.evidence {
        let text: String = e.text.chars().take(160).collect();
        out.push_str(&format!("    {}: {}\n", e.source, text.replace('\n', " ")));
    }
    out
}

/// Runs a tickets subcommand against the project at `root`.
pub fn run(root: &Path, cmd: TicketsCommand) -> anyhow::Result<ExitCode> {
    let store = TicketStore::for_project(&captain_hook::state::state_root(), root);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    match cmd {
        TicketsCommand::List { all, json } => {
            let tickets = store.list()?;
            let shown: Vec<&Ticket> = tickets.iter().filter(|t| all || t.is_live(now)).collect();
            if json {
                for t in shown {
                    println!("{}", serde_json::to_string(t)?);
                }
            } else if shown.is_empty() {
                println!("no tickets in {}", store.path().display());
            } else {
                for t in shown {
                    print!("{}", describe(t, now));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TicketsCommand::Revoke { id } => match store.revoke(&id, now)? {
            Revoked::Now => {
                println!("revoked {id}");
                Ok(ExitCode::SUCCESS)
            }
            Revoked::Already(at) => {
                eprintln!(
                    "capt-hook: ticket {id} was already revoked {}",
                    utc_time(at)
                );
                Ok(ExitCode::from(1))
            }
            Revoked::Unknown => {
                eprintln!("capt-hook: no ticket {id} in {}", store.path().display());
                Ok(ExitCode::from(1))
            }
        },
    }
}
