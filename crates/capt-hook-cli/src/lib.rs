//! The `capt-hook` command line: evaluate one event in one process, test and inspect hook files.
//!
//! Exit codes are decided here and nowhere else: 0 for every dispatch outcome (a block is
//! expressed in the JSON, never by exit 2), 1 for usage errors, unknown events, failed tests and
//! hook files that do not load.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use capt_hook_core::{EventContext, EventKind, envelope};
use captain_hook::project::resolve_root;
use captain_hook::testing::{TestOutcome, all_passed, human_report, json_report, run_test};
use captain_hook::{DispatchOptions, Dispatcher, Event, LoadError, Project, Registry, load_dir};
use clap::{Parser, Subcommand, ValueEnum};

mod agents;
pub mod helper;
mod journal;
mod logging;
mod packs;
mod policy;
mod rust_project;
mod scaffold;
mod tickets;

/// Claude Code hooks as typed, declarative data.
#[derive(Debug, Parser)]
#[command(name = "capt-hook", version, about)]
struct Cli {
    /// The project root (default: $CLAUDE_PROJECT_DIR, $FACTORY_PROJECT_DIR, the payload's cwd,
    /// then the current directory).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// The hooks directory (default: <root>/.claude/hooks).
    #[arg(long, global = true)]
    hooks: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Evaluate one event read from stdin and print Claude Code's envelope.
    Run {
        /// The event name (PreToolUse, Stop, …).
        event: String,
        /// Run only the async hooks (after Claude Code has its answer).
        #[arg(long = "async")]
        run_async: bool,
        /// Also run the packs (builtin, language, enabled plugins), as the host's workers do.
        #[arg(long)]
        packs: bool,
    },
    /// Run every hook's inline tests.
    Test {
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
    },
    /// Load and validate the hook files without running tests.
    Check,
    /// Print the JSON Schema of hook files.
    Schema,
    /// List the hooks that run for this project (its own and its packs'), and what is off and why.
    List,
    /// Packs: `list` what this project gets, `test` a plugin's pack or the builtin ones.
    Pack {
        #[command(subcommand)]
        command: PackCommand,
    },
    /// Read a payload from stdin and show, for every hook, whether it matched and why not.
    Explain {
        /// The event name.
        event: String,
        /// Also explain the packs' hooks, as the host's workers run them.
        #[arg(long)]
        packs: bool,
    },
    /// Scaffold .claude/hooks/example.toml, or with --rust a Rust hook project (never
    /// overwrites).
    Init {
        /// Scaffold a Cargo package whose `main` registers hooks in Rust.
        #[arg(long)]
        rust: bool,
    },
    /// Compile the project's Rust hooks (.claude/hooks/Cargo.toml) into its build cache.
    Build {
        /// Print nothing when the build is already up to date.
        #[arg(long)]
        quiet: bool,
    },
    /// Point another coding agent's hooks at capt-hook: every event it has runs the `hook`
    /// client (`hook run --agent <agent> <Event>`), its other hooks and settings kept; running
    /// it again changes nothing. Writes the project's file, or the user's with --user. For
    /// Codex it also records the user's trust in these hooks (their hashes, in Codex's own
    /// config.toml), without which Codex skips them.
    Install {
        /// The agent: codex, factory, gemini, cursor or copilot (Claude Code uses the plugin).
        #[arg(long)]
        agent: String,
        /// The user's configuration instead of the project's.
        #[arg(long)]
        user: bool,
        /// The client the agent runs (default: `hook` beside this program, else on the PATH).
        #[arg(long)]
        hook: Option<PathBuf>,
    },
    /// Remove what `install --agent` wrote (for Codex, the trust it recorded too), leaving the
    /// agent's other hooks as they were.
    Uninstall {
        /// The agent: codex, factory, gemini, cursor or copilot.
        #[arg(long)]
        agent: String,
        /// The user's configuration instead of the project's.
        #[arg(long)]
        user: bool,
    },
    /// Check the installation: duplicate hook registrations, a missing or stale host.
    Doctor,
    /// Show a session's event log: what fired, the verdict, timing and errors, one line per
    /// event (the newest session when --session is not given).
    Logs {
        /// The session id (or a transcript path named after it).
        #[arg(long)]
        session: Option<String>,
        /// Keep printing lines as they are written.
        #[arg(long, short)]
        follow: bool,
        /// Print the stored JSON lines.
        #[arg(long)]
        json: bool,
        /// Only the last N lines.
        #[arg(long)]
        tail: Option<usize>,
        /// Show LLM hooks' judge calls (latency, cost) and failure records (argv, exit code,
        /// stderr and prompt tails) instead, of every session or of --session.
        #[arg(long, conflicts_with = "follow")]
        judge: bool,
    },
    /// Query the decision ledger: one row per verdict a hook delivered.
    Decisions(journal::DecisionArgs),
    /// Policy packs (loaded before every project's hooks, never turned off by one): `status`,
    /// `verify` their signatures, `sums` for signing.
    Policy {
        #[command(subcommand)]
        command: policy::PolicyCommand,
    },
    /// The project's permission tickets: list or revoke them.
    Tickets {
        #[command(subcommand)]
        command: tickets::TicketsCommand,
    },
    /// Replay a recorded transcript through the hooks and show where they would have fired.
    Replay {
        /// The transcript (`.jsonl`) to replay.
        transcript: PathBuf,
        /// Show every replayed event, not only those where a hook fired.
        #[arg(long)]
        all: bool,
    },
    /// The host as a managed service: `status`, `install`, `uninstall`.
    Helper {
        #[command(subcommand)]
        command: HelperCommand,
    },
}

#[derive(Debug, Subcommand)]
enum PackCommand {
    /// One row per pack considered for this project: id, kind, hooks, state, why.
    List,
    /// Test a plugin's pack (its layout, dependency, hooks and inline tests), or with no
    /// argument every builtin pack.
    Test {
        /// The plugin's root directory (holding .claude-plugin/ and capt-hook/).
        plugin_root: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum HelperCommand {
    /// Whether a host answers (never starts one) and whether a service is installed.
    Status,
    /// Install the systemd user unit (Linux) or launchd agent (macOS) and start it.
    Install {
        /// The host binary (default: capt-hookd beside this program, or in ../Helpers/).
        #[arg(long)]
        host: Option<PathBuf>,
        /// Print the service definition and write nothing.
        #[arg(long)]
        print: bool,
        /// Write the definition without asking the service manager to start it.
        #[arg(long)]
        no_start: bool,
    },
    /// Stop the service and remove its definition (the host still starts on demand).
    Uninstall,
}

/// Runs the command line and returns the exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap exits 2 on a usage error, and 2 is what Claude Code reads as a blocking
            // verdict: a mistyped `capt-hook run` in a hook command is an error, not a deny.
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    logging::init();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("capt-hook: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run {
            event,
            run_async,
            packs,
        } => {
            // The behaviour-case runner can only set the environment, not add the flag.
            let packs = packs
                || std::env::var(capt_hook_core::env::CAPT_HOOK_RUN_PACKS)
                    .is_ok_and(|v| capt_hook_core::env::is_truthy(&v));
            run(&cli.root, &cli.hooks, &event, run_async, packs)
        }
        Command::Explain { event, packs } => explain(&cli.root, &cli.hooks, &event, packs),
        Command::Test { format } => test(&cli.root, &cli.hooks, format),
        Command::Check => check(&cli.root, &cli.hooks),
        Command::Schema => {
            print!("{}", captain_hook::spec::json_schema());
            Ok(ExitCode::SUCCESS)
        }
        Command::List => {
            let root = project_root(&cli.root, None);
            Ok(packs::list(&root, &hooks_dir(&cli.hooks, &root)))
        }
        Command::Pack { command } => {
            let root = project_root(&cli.root, None);
            Ok(match command {
                PackCommand::List => packs::pack_list(&root, &hooks_dir(&cli.hooks, &root)),
                PackCommand::Test { plugin_root } => packs::pack_test(plugin_root.as_ref()),
            })
        }
        Command::Init { rust: false } => scaffold::init(&project_root(&cli.root, None)),
        Command::Init { rust: true } => rust_project::init(&project_root(&cli.root, None)),
        Command::Build { quiet } => Ok(
            match rust_project::build(&project_root(&cli.root, None), quiet)? {
                rust_project::Built::Exe(_) => ExitCode::SUCCESS,
                rust_project::Built::Failed => ExitCode::from(1),
            },
        ),
        Command::Tickets { command } => tickets::run(&project_root(&cli.root, None), command),
        Command::Replay { transcript, all } => {
            let root = project_root(&cli.root, None);
            let (registry, errors) = load(&root, &cli.hooks);
            report_load_errors(&errors);
            let dispatcher = Dispatcher::new(Arc::new(registry), Some(&root));
            let steps = captain_hook::replay::replay(&dispatcher, &root, &transcript)?;
            print!("{}", captain_hook::replay::report(&steps, all));
            Ok(if errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Logs {
            session,
            json,
            tail,
            judge: true,
            ..
        } => journal::judge_logs(session.as_deref(), json, tail),
        Command::Logs {
            session,
            follow,
            json,
            tail,
            judge: false,
        } => journal::logs(session.as_deref(), follow, json, tail),
        Command::Decisions(args) => journal::decisions(&args),
        Command::Policy { command } => policy::run(&command),
        Command::Helper { command } => match command {
            HelperCommand::Status => helper::status(),
            HelperCommand::Install {
                host,
                print,
                no_start,
            } => helper::install(host.as_deref(), print, !no_start),
            HelperCommand::Uninstall => helper::uninstall(),
        },
        Command::Install { agent, user, hook } => agents::install(
            &project_root(&cli.root, None),
            &agent,
            user,
            hook.as_deref(),
            &|v| std::env::var(v).ok(),
        ),
        Command::Uninstall { agent, user } => {
            agents::uninstall(&project_root(&cli.root, None), &agent, user, &|v| {
                std::env::var(v).ok()
            })
        }
        Command::Doctor => {
            let root = project_root(&cli.root, None);
            let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
            let mut report = capt_hook_client::doctor::doctor(&root, &home);
            report.findings.extend(agents::doctor(&root, &home));
            print!("{report}");
            Ok(ExitCode::from(if report.is_healthy() { 0 } else { 1 }))
        }
    }
}

/// `--root`, else the environment, else the payload's cwd, else the process cwd.
fn project_root(flag: &Option<PathBuf>, payload_cwd: Option<&str>) -> PathBuf {
    captain_hook::project::root_from(flag.as_deref(), payload_cwd)
}

fn hooks_dir(flag: &Option<PathBuf>, root: &Path) -> PathBuf {
    flag.clone()
        .unwrap_or_else(|| root.join(".claude").join("hooks"))
}

fn load(root: &Path, hooks: &Option<PathBuf>) -> (Registry, Vec<LoadError>) {
    let mut registry = Registry::new();
    let dir = hooks_dir(hooks, root);
    let mut errors = load_dir(&dir, &mut registry);
    errors.extend(captain_hook::llm::check_specialties(root, &dir, &registry));
    (registry, errors)
}

/// Parses the event name, reads the payload and builds the event; `None` when there is nothing
/// to evaluate (the caller exits 0).
fn prepare(
    root_flag: &Option<PathBuf>,
    name: &str,
) -> anyhow::Result<Result<Option<(Event, PathBuf)>, ExitCode>> {
    // An unknown name fails before stdin is read, so a typo never waits on a terminal.
    if let Err(e) = name.parse::<EventKind>() {
        eprintln!("{e}");
        return Ok(Err(ExitCode::from(1)));
    }
    let stdin = match captain_hook::project::read_input(name, std::io::stdin().lock()) {
        Ok(stdin) => stdin,
        Err(rejected) => {
            for line in &rejected.stderr {
                eprintln!("{line}");
            }
            return Ok(Err(ExitCode::from(1)));
        }
    };
    let mut root = PathBuf::new();
    let context = |cwd: Option<&str>| {
        root = project_root(root_flag, cwd);
        EventContext {
            project_root: Some(root.clone()),
            skip_permissions: None,
            // Explaining must not spend fires or trip once-per-turn throttles.
            state_root: None,
            origin_pid: None,
            request_env: None,
            coding_agent: None,
        }
    };
    match captain_hook::project::read_event(name, &stdin, context) {
        Ok(Some(evt)) => Ok(Ok(Some((evt, root)))),
        Ok(None) => Ok(Ok(None)),
        Err(rejected) => {
            for line in &rejected.stderr {
                eprintln!("{line}");
            }
            if rejected.exit_code == 0 {
                Ok(Ok(None))
            } else {
                Ok(Err(ExitCode::from(rejected.exit_code)))
            }
        }
    }
}

/// A load error for a terminal: the one-line form first (what scripts grep for), then the
/// file's lines with the span underlined when the error has one.
fn shown(e: &LoadError) -> String {
    let one_line = e.to_string();
    let rendered = e.render();
    if rendered == one_line {
        one_line
    } else {
        format!("{one_line}\n{rendered}")
    }
}

fn report_load_errors(errors: &[LoadError]) {
    for e in errors {
        tracing::error!(error = %e, "hook file did not load");
        eprintln!("capt-hook: {}", shown(e));
    }
}

fn run(
    root: &Option<PathBuf>,
    hooks: &Option<PathBuf>,
    event: &str,
    run_async: bool,
    with_packs: bool,
) -> anyhow::Result<ExitCode> {
    // A name this build does not know comes from a newer Claude Code: a clean no-op, never an
    // error Claude Code would report. The payload is drained so the writer never sees a broken
    // pipe, unless stdin is a terminal (a typo at the prompt must not wait for input).
    if let Err(e) = event.parse::<EventKind>() {
        eprintln!("capt-hook: {e}; nothing to do");
        if !std::io::stdin().is_terminal() {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        }
        return Ok(ExitCode::SUCCESS);
    }
    // At most the client's limit: a larger payload is answered (the user decides a guarded
    // call) without reading the rest.
    let stdin = match captain_hook::project::read_input(event, std::io::stdin().lock()) {
        Ok(stdin) => stdin,
        Err(rejected) => return Ok(captain_hook::worker::run::print(&rejected)),
    };
    let root = resolve_root(root.as_deref(), &stdin);
    let mut notice = None;
    if hooks.is_none() && capt_hook_rust_project::is_rust_project(&root) {
        match rust_project::current(&root) {
            rust_project::Current::Built(exe) => {
                return rust_project::run(&exe, &root, event, run_async, &stdin);
            }
            rust_project::Current::NotLive(note) => notice = note,
        }
    }
    // Only here: a built Rust project answers above without loading any pattern.
    let facts = pattern_facts();
    let project = match hooks {
        // `--packs` holds with a named directory too: skipping them would let through what
        // the same call with the default directory denies.
        Some(dir) if with_packs && dir.is_dir() => {
            Project::load_with_packs(&root, dir, &Registry::new())
        }
        // A named directory that is missing is an error (its guards would silently not run).
        Some(dir) => Project::load_named(&root, dir),
        None if with_packs => {
            Project::load_with_packs(&root, &hooks_dir(hooks, &root), &Registry::new())
                .with_notice(notice)
        }
        None => Project::load(&root, &hooks_dir(hooks, &root)).with_notice(notice),
    };
    let code = captain_hook::worker::run::evaluate_and_print(&project, event, &stdin, run_async);
    if let Some(cache) = facts {
        // After the answer is printed: a cache that cannot be written only means parsing again.
        if let Err(e) = cache.save() {
            tracing::debug!("cannot save the pattern facts: {e}");
        }
    }
    Ok(code)
}

/// The file where runs of this executable keep what parsing patterns taught them (one file for
/// every project: test runners and the peers' bench call `run` once per case, each with the same
/// builtin packs, so most of a run's patterns were parsed by the run before it; a file per
/// project would leave one behind per temporary project). Workers keep their own, per project.
const RUN_FACTS: &str = "capt-hook-run";

/// Installs the facts cache for this run's patterns ([`capt_hook_core::pattern::FactsCache`]);
/// `None` when this executable cannot be identified (then patterns are parsed, as without it).
fn pattern_facts() -> Option<&'static capt_hook_core::pattern::FactsCache> {
    let dir = capt_hook_proto::paths::pattern_facts_dir();
    capt_hook_core::pattern::install_facts_cache(capt_hook_core::pattern::FactsCache::open(
        &dir, RUN_FACTS,
    )?);
    capt_hook_core::pattern::installed_facts_cache()
}

fn explain(
    root: &Option<PathBuf>,
    hooks: &Option<PathBuf>,
    event: &str,
    with_packs: bool,
) -> anyhow::Result<ExitCode> {
    let (evt, root) = match prepare(root, event)? {
        Err(code) => return Ok(code),
        Ok(None) => {
            println!("No event to explain (blank or malformed stdin).");
            return Ok(ExitCode::SUCCESS);
        }
        Ok(Some(x)) => x,
    };
    let registry = if with_packs && hooks.as_deref().is_none_or(Path::is_dir) {
        let project = Project::load_with_packs(&root, &hooks_dir(hooks, &root), &Registry::new());
        report_load_errors(project.errors());
        project.dispatcher().registry().clone()
    } else {
        let (registry, errors) = load(&root, hooks);
        report_load_errors(&errors);
        registry
    };
    let dispatcher = Dispatcher::new(Arc::new(registry), Some(&root));
    let kind = evt.kind();
    let evt = Arc::new(evt);
    let (result, traces) = dispatcher.explain(&evt, DispatchOptions::default());
    let mut out = String::new();
    let subject = match (evt.tool_name(), evt.command(), evt.file()) {
        (Some(t), Some(c), _) => format!(" ({t}: {c})"),
        (Some(t), None, Some(f)) => format!(" ({t}: {f})"),
        (Some(t), None, None) => format!(" ({t})"),
        _ => String::new(),
    };
    out.push_str(&format!("{kind}{subject}\n"));
    if dispatcher.registry().is_empty() {
        out.push_str("  no hooks registered\n");
    }
    for (hook, trace) in dispatcher.registry().hooks().iter().zip(traces) {
        let source = hook
            .source
            .as_ref()
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        let what = trace.describe(hook);
        out.push_str(&format!(
            "  {} ({}{source})\n    {what}\n",
            hook.name, hook.kind
        ));
    }
    match envelope(kind, result.as_ref()) {
        Some(o) if o.blocking_stderr().is_some() => out.push_str(&format!(
            "verdict: block\noutput: exit 2, stderr: {}\n",
            o.blocking_stderr().unwrap_or_default()
        )),
        Some(o) => out.push_str(&format!(
            "verdict: {}\noutput: {}\n",
            result.as_ref().map(|r| r.action.name()).unwrap_or("notice"),
            o.render()
        )),
        None => out.push_str("verdict: none (no output; Claude Code proceeds as usual)\n"),
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn test(
    root: &Option<PathBuf>,
    hooks: &Option<PathBuf>,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let root = project_root(root, None);
    if let Some(problem) = named_dir_problem(hooks, &hooks_dir(hooks, &root)) {
        eprintln!("{problem}");
        return Ok(ExitCode::from(1));
    }
    if hooks.is_none() && capt_hook_rust_project::is_rust_project(&root) {
        return rust_project::test(&root, matches!(format, Format::Json));
    }
    let (registry, errors) = load(&root, hooks);
    let mut outcomes: Vec<TestOutcome> = Vec::new();
    for hook in registry.hooks() {
        for t in &hook.tests {
            outcomes.push(run_test(hook, t, Some(&root)));
        }
    }
    for e in &errors {
        eprintln!("  ERROR {e}");
    }
    match format {
        Format::Human => print!("{}", human_report(&outcomes)),
        Format::Json => print!("{}", json_report(&outcomes)),
    }
    Ok(if all_passed(&outcomes) && errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What is wrong with a hooks directory named by `--hooks` that holds nothing: a typo, not a
/// project without hooks, and saying OK would hide that nothing is being checked. `None` when
/// the directory was not named or has hook files.
fn named_dir_problem(hooks: &Option<PathBuf>, dir: &Path) -> Option<String> {
    hooks.as_ref()?;
    let problem = match captain_hook::loader::hook_files(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(_) => return None,
        Ok(f) if f.is_empty() => "holds no hook files (*.toml not starting with _)",
        Ok(_) => return None,
    };
    Some(format!(
        "capt-hook: the hooks directory {} {problem}",
        dir.display()
    ))
}

fn check(root: &Option<PathBuf>, hooks: &Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let root = project_root(root, None);
    let dir = hooks_dir(hooks, &root);
    if let Some(problem) = named_dir_problem(hooks, &dir) {
        eprintln!("{problem}");
        return Ok(ExitCode::from(1));
    }
    let files = captain_hook::loader::hook_files(&dir);
    let (registry, mut errors) = load(&root, hooks);
    if let Err(e) = captain_hook::packs::read_config(&dir) {
        errors.push(e);
    }
    for e in &errors {
        eprintln!("{}", shown(e));
    }
    let files = files.map(|f| f.len()).unwrap_or(0);
    for warning in registry
        .hooks()
        .iter()
        .filter_map(|h| h.stop_loop_warning())
    {
        eprintln!("warning: {warning}");
    }
    if errors.is_empty() {
        println!(
            "{} hooks in {} files under {}: OK",
            registry.hooks().len(),
            files,
            dir.display()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} errors", errors.len());
        Ok(ExitCode::from(1))
    }
}
