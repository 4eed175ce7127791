//! `cargo xtask e2e-claude`: the real Claude Code CLI (pinned, from the npm registry) runs our
//! installed plugin in `-p` mode against a scripted fake Messages API on loopback. Each case
//! writes hook files into a fresh project, scripts the model's turns, and asserts what the model
//! was sent next (tool results, context, Stop feedback) and what happened on disk.
//!
//! No traffic leaves the machine: when `unshare -n` works the whole run (fake API, Claude Code,
//! our host) lives in a fresh network namespace with only loopback; otherwise it says so and
//! relies on Claude Code's own switches for non-essential traffic.
//!
//! `agents` is `cargo xtask e2e-agents`, the same harness (fake API, sandbox, npm cache,
//! namespace) for the OpenAI Codex and Google Gemini CLIs.

pub(crate) mod agents;
mod api;
mod cases;
pub(crate) mod claude;
mod npm;
mod variants;
mod wire;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::sandbox::Sandbox;
use api::{FakeApi, Reply, Request};
pub use variants::Route;
use variants::{Plugins, SPAWN_LOG};

/// How long one Claude Code run may take before the case fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// What the cases need, handed from the outer process to the one in the network namespace.
struct Setup {
    sandbox: PathBuf,
    claude: PathBuf,
    plugin: PathBuf,
    logs: PathBuf,
    only: Vec<String>,
    /// The routes each case runs by (`--via mod|cmd`; both when none is named).
    via: Vec<Route>,
    /// `--waiting FILE`: runs known to fail, each with the open issue it waits for.
    waiting: Option<PathBuf>,
}

impl Setup {
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--inside".into(),
            self.sandbox.display().to_string(),
            "--claude".into(),
            self.claude.display().to_string(),
            "--plugin".into(),
            self.plugin.display().to_string(),
            "--logs".into(),
            self.logs.display().to_string(),
        ];
        for o in &self.only {
            args.extend(["--only".into(), o.clone()]);
        }
        for r in &self.via {
            args.extend(["--via".into(), r.tag().into()]);
        }
        if let Some(w) = &self.waiting {
            args.extend(["--waiting".into(), w.display().to_string()]);
        }
        args
    }
}

/// The usage line.
const USAGE: &str =
    "usage: e2e-claude [--only NAME]... [--via mod|cmd]... [--waiting FILE] [--bins DIR]";

/// Entry point: `e2e-claude [--only SUBSTRING]... [--via mod|cmd]...`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let mut only = Vec::new();
    let mut via = Vec::new();
    let mut waiting = None;
    let mut bins = None;
    let mut inside = None;
    let (mut claude, mut plugin, mut logs) = (None, None, None);
    // Every option takes a value; `--inside` and the paths after it are how the run re-enters
    // itself in the network namespace.
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if ![
            "--only",
            "--via",
            "--waiting",
            "--bins",
            "--inside",
            "--claude",
            "--plugin",
            "--logs",
        ]
        .contains(&arg.as_str())
        {
            bail!("e2e-claude: unknown argument {arg:?} ({USAGE})");
        }
        let Some(value) = it.next() else {
            bail!("e2e-claude: {arg} needs a value ({USAGE})");
        };
        match arg.as_str() {
            "--only" => only.push(value.clone()),
            // Absolute: the run re-enters itself from another directory.
            "--waiting" => waiting = Some(std::path::absolute(value)?),
            // The binaries `cargo xtask dist` already built (CI's, a measured build): installed
            // as they are, with no build here.
            "--bins" => bins = Some(std::path::absolute(value)?),
            "--via" => via.push(
                Route::parse(value)
                    .with_context(|| format!("e2e-claude: --via {value:?} ({USAGE})"))?,
            ),
            "--inside" => inside = Some(PathBuf::from(value)),
            "--claude" => claude = Some(PathBuf::from(value)),
            "--plugin" => plugin = Some(PathBuf::from(value)),
            "--logs" => logs = Some(PathBuf::from(value)),
            _ => {}
        }
    }
    if let Some(sandbox) = inside {
        let setup = Setup {
            sandbox,
            claude: claude.context("--inside needs --claude")?,
            plugin: plugin.context("--inside needs --plugin")?,
            logs: logs.context("--inside needs --logs")?,
            only,
            via,
            waiting,
        };
        return run_cases(&setup);
    }

    selected(&only)?;
    let started = Instant::now();
    let target = crate::target_dir()?;
    let claude = claude::ensure(&claude::cache_dir(&target))?;
    let mut sandbox = Sandbox::new(Path::new("."), "e2e")?;
    let home = sandbox.dir.join("home");
    let plugin = match &bins {
        Some(dir) => crate::install_from(dir, &home)?,
        None => crate::install_into(&home)?,
    };
    sandbox.bins = crate::installed_bin_dir(&home);
    let logs = target.join("e2e-claude/logs");
    let _ = std::fs::remove_dir_all(&logs);
    let setup = Setup {
        sandbox: sandbox.dir.clone(),
        claude,
        plugin,
        logs,
        only,
        via,
        waiting,
    };
    println!(
        "e2e-claude: Claude Code {} with the plugin at {} (setup {:.1} s)",
        claude::VERSION,
        setup.plugin.display(),
        started.elapsed().as_secs_f64()
    );
    let result = isolated("e2e-claude", &sandbox.dir, &setup.to_args(), || {
        run_cases(&setup)
    });
    drop(sandbox);
    println!(
        "e2e-claude: total {:.1} s; logs in {}",
        started.elapsed().as_secs_f64(),
        setup.logs.display()
    );
    result
}

/// Runs `suite` with `args` again in a fresh network namespace with only loopback (a copy of
/// this binary, so a build meanwhile cannot pull it away), or `here` in this process when no
/// such namespace can be made, saying which.
fn isolated(
    suite: &str,
    sandbox: &Path,
    args: &[String],
    here: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    match loopback_only() {
        Ok(flags) => {
            println!(
                "{suite}: running in a network namespace with only loopback (unshare {})",
                flags.join(" ")
            );
            // A build during the long setup may have replaced (deleted) the file this process
            // started from; /proc/self/exe still reads it.
            let exe = sandbox.join("xtask");
            std::fs::copy("/proc/self/exe", &exe).context("copying the xtask binary")?;
            // `ip` brings the namespace's loopback up, then the same binary runs the cases.
            let status = Command::new("unshare")
                .args(flags)
                .args(["sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
                .arg(exe)
                .arg(suite)
                .args(args)
                .status()
                .context("running unshare")?;
            if status.success() {
                Ok(())
            } else {
                Err(anyhow::anyhow!("{suite} failed ({status})"))
            }
        }
        Err(reason) => {
            println!(
                "{suite}: NOT isolating the network ({reason}); only the agents' own switches \
                 and the loopback base URL keep them offline"
            );
            here()
        }
    }
}

/// The `unshare` flags that give a network namespace with a working loopback here (`-n` as
/// root, `-r -n` where unprivileged user namespaces are allowed), or why there are none.
fn loopback_only() -> Result<&'static [&'static str], String> {
    let mut tried = Vec::new();
    for flags in [&["-n"][..], &["-r", "-n"][..]] {
        match Command::new("unshare")
            .args(flags)
            .args(["ip", "link", "set", "lo", "up"])
            .stdin(Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => return Ok(flags),
            Ok(out) => tried.push(format!(
                "`unshare {} ip link set lo up`: {}",
                flags.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => return Err(format!("cannot run unshare: {e}")),
        }
    }
    Err(tried.join("; "))
}

/// The cases whose name contains one of `only` (all when it is empty); an error when none does.
fn selected(only: &[String]) -> anyhow::Result<Vec<cases::Case>> {
    let cases: Vec<cases::Case> = cases::all()
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name.contains(o.as_str())))
        .collect();
    if cases.is_empty() {
        bail!("e2e-claude: no case name contains any of {only:?}");
    }
    Ok(cases)
}

/// Runs every selected case; fails when any did.
fn run_cases(setup: &Setup) -> anyhow::Result<()> {
    let home = setup.sandbox.join("home");
    let sandbox = Sandbox::attach(&setup.sandbox, &crate::installed_bin_dir(&home));
    let cases = selected(&setup.only)?;
    let mut failed = Vec::new();
    let started = Instant::now();
    let plugins = Plugins::prepare(&setup.plugin, &setup.sandbox.join("plugins/routes"))?;
    let routes = if setup.via.is_empty() {
        vec![Route::Mod, Route::Command]
    } else {
        setup.via.clone()
    };
    let mut overhead = Vec::new();
    // Before any case: a plugin Claude Code refuses to load would fail them all, less clearly.
    match validate_plugin(setup, &home) {
        Ok(summary) => println!(
            "PASS  {VALIDATE:<34} {:5.1} s  {summary}",
            started.elapsed().as_secs_f64()
        ),
        Err(detail) => {
            println!(
                "FAIL  {VALIDATE:<34} {:5.1} s  claude plugin validate on the installed plugin",
                started.elapsed().as_secs_f64()
            );
            for line in detail.lines() {
                println!("        {line}");
            }
            failed.push(VALIDATE.to_owned());
        }
    }
    let mut runs = 0;
    let mut ran_names: Vec<String> = Vec::new();
    for case in &cases {
        // The overhead case also runs the no-op plugin, twice each, alternating.
        let case_routes: Vec<Route> = if case.name == cases::OVERHEAD {
            [Route::Mod, Route::Command, Route::Noop, Route::NoopMod].repeat(2)
        } else {
            routes.clone()
        };
        for route in case_routes {
            runs += 1;
            let started = Instant::now();
            let mut unserved = Vec::new();
            let verdict = run_case(setup, &sandbox, &plugins, case, route, &mut unserved);
            let secs = started.elapsed().as_secs_f64();
            let name = format!("{} [{}]", case.name, route.tag());
            ran_names.push(name.clone());
            match verdict {
                Ok((spawned, ms)) => {
                    println!("PASS  {name:<40} {secs:5.1} s  {}", case.about);
                    if !matches!(route, Route::Noop | Route::NoopMod) {
                        println!("        {spawned}");
                    }
                    if case.name == cases::OVERHEAD {
                        overhead.push((route, ms));
                    }
                }
                Err(detail) => {
                    println!("FAIL  {name:<40} {secs:5.1} s  {}", case.about);
                    for line in detail.lines() {
                        println!("        {line}");
                    }
                    failed.push(name);
                }
            }
            for request in unserved {
                println!("        note: the fake API refused {request} (Claude Code asked for it)");
            }
        }
    }
    if !overhead.is_empty() {
        report_overhead(&overhead);
    }
    println!(
        "{runs} runs: {} passed, {} failed",
        runs - failed.len(),
        failed.len()
    );
    let waiting = match &setup.waiting {
        Some(file) => read_waiting(file)?,
        None => Vec::new(),
    };
    let (known, new): (Vec<String>, Vec<String>) = failed
        .into_iter()
        .partition(|f| waiting.iter().any(|(name, _)| name == f));
    for f in &known {
        let why = waiting.iter().find(|(n, _)| n == f).map_or("", |(_, w)| w);
        println!("waiting: {f} ({why})");
    }
    // The list only shrinks: a listed run that passes (in this selection) must leave it.
    let ran: Vec<&(String, String)> = waiting
        .iter()
        .filter(|(n, _)| !known.contains(n) && ran_names.contains(n))
        .collect();
    if !ran.is_empty() {
        let names: Vec<&str> = ran.iter().map(|(n, _)| n.as_str()).collect();
        bail!(
            "listed as waiting but passed: {} (take them off the waiting list)",
            names.join(", ")
        );
    }
    if !new.is_empty() {
        bail!("failed: {}", new.join(", "));
    }
    Ok(())
}

/// Reads a waiting list: one run a line (`case [route] # issue N: why`), `#` lines and blank
/// lines aside. A line that names no issue is an error: the list says what each run waits for.
fn read_waiting(file: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("e2e-claude: reading {}", file.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(" # ") {
            Some((name, why)) if why.trim_start().starts_with("issue ") => {
                out.push((name.trim().to_owned(), why.trim().to_owned()));
            }
            _ => bail!(
                "{}:{}: expected `case [route] # issue N: why`, got {line:?}",
                file.display(),
                n + 1
            ),
        }
    }
    Ok(out)
}

/// The name the plugin check is reported under, beside the cases.
const VALIDATE: &str = "plugin-validate";

/// `claude plugin validate --json` on the installed plugin, with the pinned Claude Code: an
/// error in its manifest or `hooks/hooks.json` (Claude Code refuses a whole plugin whose
/// guard-event entry it cannot load) fails. The summary counts what it provides and warns of.
fn validate_plugin(setup: &Setup, home: &Path) -> Result<String, String> {
    let out = Command::new(&setup.claude)
        .args(["plugin", "validate", "--json"])
        .arg(&setup.plugin)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("LANG", "C.UTF-8")
        .env("HOME", home)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", setup.claude.display()))?;
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "claude plugin validate ({}) printed no JSON report ({e}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    validation_verdict(&report, out.status.success())
}

/// The verdict on a `claude plugin validate --json` report: every error of the manifest and of
/// each file it read, or a one-line summary.
fn validation_verdict(report: &Value, exited_ok: bool) -> Result<String, String> {
    let files: Vec<&Value> = std::iter::once(&report["manifest"])
        .chain(report["contents"].as_array().into_iter().flatten())
        .collect();
    let mut errors = Vec::new();
    let mut warnings = 0;
    for file in &files {
        let name = file["file"].as_str().unwrap_or("?");
        for e in file["errors"].as_array().into_iter().flatten() {
            errors.push(format!(
                "{name}: {}: {}",
                e["path"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            ));
        }
        warnings += file["warnings"].as_array().map_or(0, Vec::len);
    }
    if report["success"] != true || !exited_ok || !errors.is_empty() {
        if errors.is_empty() {
            errors.push(format!(
                "validation failed without naming an error (success: {}, exit {})",
                report["success"],
                if exited_ok { "0" } else { "non-zero" }
            ));
        }
        return Err(errors.join("\n"));
    }
    let hooks = report["provides"]["hooks"].as_array().map_or(0, Vec::len);
    Ok(format!(
        "claude plugin validate: the installed plugin loads ({hooks} hooks, {warnings} warnings)"
    ))
}

/// One case by one route: project, fake API, one Claude Code run, the case's checks, and on
/// the mod's route the spawn rule ([`spawn_rule`]). The error is the detail to print (what was
/// expected, what our plugin answered); requests the fake did not serve are added to
/// `unserved` either way. `Ok` holds the spawn summary and the PreToolUse times the debug log
/// gives.
fn run_case(
    setup: &Setup,
    sandbox: &Sandbox,
    plugins: &Plugins,
    case: &cases::Case,
    route: Route,
    unserved: &mut Vec<String>,
) -> Result<(String, Vec<f64>), String> {
    // A project per route: a run must not find the files of the other.
    let dir_name = format!("{}-{}", case.name, route.tag());
    let project = if case.hooks.is_empty() {
        let root = sandbox.dir.join("projects").join(&dir_name);
        std::fs::create_dir_all(&root)
            .map(|()| root)
            .map_err(anyhow::Error::from)
    } else {
        sandbox.project(&dir_name, &[("e2e.toml", case.hooks)])
    }
    .map_err(|e| format!("creating the project: {e:#}"))?;
    for (rel, text) in case.files {
        let path = project.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, text.replace("{P}", &project.display().to_string()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if !case.setup.is_empty() {
        let out = sandbox
            .shell(case.setup)
            .current_dir(&project)
            .output()
            .map_err(|e| format!("running the case's setup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the case's setup failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    // A hook file that does not load would make every "nothing reached the model" check pass.
    let loaded = sandbox
        .command("capt-hook")
        .arg("--root")
        .arg(&project)
        .arg("check")
        .output()
        .map_err(|e| format!("running capt-hook check: {e}"))?;
    if !loaded.status.success() {
        return Err(format!(
            "the case's hook file does not load:\n{}{}",
            String::from_utf8_lossy(&loaded.stdout),
            String::from_utf8_lossy(&loaded.stderr)
        ));
    }
    let script = case
        .script
        .iter()
        .map(|r| with_project(r, &project))
        .collect();
    let api = FakeApi::start(script).map_err(|e| format!("starting the fake API: {e}"))?;
    let logs = setup.logs.join(case.name).join(route.tag());
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let plugin = plugin_for(sandbox, plugins, case, route)?;
    let host_log = host_log(sandbox);
    let host_log_from = std::fs::metadata(&host_log).map_or(0, |m| m.len());
    let run = run_claude(
        setup,
        sandbox,
        case,
        &plugin,
        &project,
        &api.base_url(),
        &logs,
    );
    let outcome = Outcome {
        project,
        requests: api.requests(),
        stream: read_lines(&logs.join("stdout.jsonl")),
        debug: std::fs::read_to_string(logs.join("debug.log")).unwrap_or_default(),
        route,
        spawns: variants::spawns(&logs.join("spawns.log")),
        mod_answers: variants::mod_answers(&host_log, host_log_from),
    };
    drop(api);
    save_requests(&logs, &outcome.requests);
    // Beside Claude Code's log, what the host and its workers said meanwhile: a hook that
    // failed (an exit 1 Claude Code logs without its stderr) is explained there.
    let _ = std::fs::write(
        logs.join("host.log"),
        variants::host_log_since(&host_log, host_log_from),
    );
    unserved.extend(
        outcome
            .requests
            .iter()
            .filter(|r| !api::served(&r.path))
            .map(|r| format!("{} {}", r.method, r.path)),
    );
    let rejected = outcome.rejected_output();
    let checked = run
        .and_then(|()| (case.check)(&outcome))
        .and_then(|()| {
            if rejected.is_empty() {
                Ok(())
            } else {
                Err("Claude Code rejected (part of) our hook output".into())
            }
        })
        .and_then(|()| spawn_rule(case, &outcome));
    let ms = variants::pre_tool_use_ms(&outcome.debug, route);
    checked
        .map(|()| (outcome.spawn_summary(), ms))
        .map_err(|detail| {
            let mut out = detail;
            for line in &rejected {
                out.push_str(&format!("\n  claude: {line}"));
            }
            for line in outcome.hook_summary() {
                out.push_str(&format!("\n{line}"));
            }
            out.push_str(&format!("\nlogs: {}", logs.display()));
            out
        })
}

/// Replaces `{P}` in scripted tool inputs with the project path.
fn with_project(reply: &Reply, project: &Path) -> Reply {
    let Reply::Blocks(blocks) = reply else {
        return reply.clone();
    };
    let p = project.display().to_string();
    Reply::Blocks(
        blocks
            .iter()
            .map(|b| match b {
                api::Block::Tool { name, input } => api::Block::Tool {
                    name: name.clone(),
                    input: serde_json::from_str(&input.to_string().replace("{P}", &p))
                        .unwrap_or_else(|_| input.clone()),
                },
                other => other.clone(),
            })
            .collect(),
    )
}

/// With the mod on, `bin/hook run <Event>` starts only for an event the module left to the
/// command hooks: one the host told it to pass on, or one a settings file of the case also
/// hooks (the module then passes it on without asking).
fn spawn_rule(case: &cases::Case, o: &Outcome) -> Result<(), String> {
    if o.route != Route::Mod || case.plugin != cases::Plugin::Installed {
        return Ok(());
    }
    let mut stray = Vec::new();
    for line in &o.spawns {
        let Some(event) = line
            .strip_prefix("run ")
            .map(|e| e.split(' ').next().unwrap_or(e))
        else {
            continue;
        };
        let passed = o.mod_answers.iter().any(|(e, _, pass)| e == event && *pass);
        let shared = case.settings.contains(&format!("\"{event}\""));
        if !passed && !shared {
            stray.push(event.to_owned());
        }
    }
    ensure_none(
        &stray,
        "bin/hook ran for events the hooks module answered itself",
    )
}

fn ensure_none(items: &[String], what: &str) -> Result<(), String> {
    if items.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", items.join(", ")))
    }
}

/// The host's log in the sandbox (the state directory under the sandbox's home).
fn host_log(sandbox: &Sandbox) -> PathBuf {
    sandbox
        .dir
        .join("home/.cache/captain-hook/host-v1/capt-hookd.log")
}

/// The overhead figures: the median PreToolUse time Claude Code logged per route.
fn report_overhead(runs: &[(Route, Vec<f64>)]) {
    let median = |route: Route| {
        let mut all: Vec<f64> = runs
            .iter()
            .filter(|(r, _)| *r == route)
            .flat_map(|(_, ms)| ms.iter().copied())
            .collect();
        all.sort_by(f64::total_cmp);
        (all.get(all.len() / 2).copied(), all.len())
    };
    let (module, n_mod) = median(Route::Mod);
    let (command, n_cmd) = median(Route::Command);
    let (noop, n_noop) = median(Route::Noop);
    let (noop_mod, n_noop_mod) = median(Route::NoopMod);
    let show = |m: Option<f64>| m.map_or("-".to_owned(), |m| format!("{m:.2} ms"));
    println!(
        "overhead: PreToolUse as Claude Code logs it (median): hooks module {} (n={n_mod}), \
         command hook {} (n={n_cmd}), no-op binary hook {} (n={n_noop}), no-op module {} \
         (n={n_noop_mod})",
        show(module),
        show(command),
        show(noop),
        show(noop_mod)
    );
    if let (Some(m), Some(c), Some(n)) = (module, command, noop) {
        println!(
            "overhead: module/command {:.2} (target <= 0.33), module/no-op {:.2} (target < 1)",
            m / c,
            m / n
        );
    }
    if let (Some(m), Some(c), Some(f)) = (module, command, noop_mod) {
        println!(
            "overhead: a module that does nothing costs {:.2} of the command hook (the floor \
             for a plugin's module, which Claude Code runs in a worker hop); ours {:.2} of that",
            f / c,
            m / f
        );
    }
}

/// The plugin directory the case runs with: the route's copy of the installed plugin, or a copy
/// of that without its client (`bin/hook`), which every hook then fails to start.
fn plugin_for(
    sandbox: &Sandbox,
    plugins: &Plugins,
    case: &cases::Case,
    route: Route,
) -> Result<PathBuf, String> {
    let base = plugins.of(route);
    match case.plugin {
        cases::Plugin::Installed | cases::Plugin::ModsRefusedByPolicy => Ok(base.to_path_buf()),
        cases::Plugin::WithoutClient => {
            let copy = sandbox
                .dir
                .join("plugins")
                .join(format!("{}-{}", case.name, route.tag()));
            let _ = std::fs::remove_dir_all(&copy);
            crate::copy_dir(base, &copy)
                .map_err(|e| format!("copying the plugin to {}: {e:#}", copy.display()))?;
            let client = copy.join("bin/hook");
            std::fs::remove_file(&client)
                .map_err(|e| format!("removing {}: {e}", client.display()))?;
            Ok(copy)
        }
    }
}

/// Runs `claude -p` for the case with an isolated environment; stdout, stderr and Claude
/// Code's debug log go to `logs`.
fn run_claude(
    setup: &Setup,
    sandbox: &Sandbox,
    case: &cases::Case,
    plugin: &Path,
    project: &Path,
    base_url: &str,
    logs: &Path,
) -> Result<(), String> {
    let file = |name: &str| {
        std::fs::File::create(logs.join(name)).map_err(|e| format!("{}: {e}", logs.display()))
    };
    let mut cmd = if case.plugin == cases::Plugin::ModsRefusedByPolicy {
        variants::under_managed_settings(
            &setup.claude,
            variants::MODS_MANAGED_ONLY,
            &logs.join("managed"),
        )
        .map_err(|e| format!("preparing the managed settings: {e:#}"))?
    } else {
        Command::new(&setup.claude)
    };
    cmd.current_dir(project)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb")
        .env("HOME", sandbox.dir.join("home"))
        .env("TMPDIR", sandbox.dir.join("tmp"))
        .env("XDG_RUNTIME_DIR", sandbox.dir.join("run"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "dummy")
        .env("CAPT_HOOK_CLAUDE_BIN", judge_cli(setup, base_url, logs)?)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        // Claude Code refuses bypass mode as root unless told it runs in a sandbox, which this is.
        .env("IS_SANDBOX", "1")
        // The counting `bin/hook` notes each start here; the host logs each answer it gives
        // the hooks module (the host a run starts inherits this).
        .env(SPAWN_LOG, logs.join("spawns.log"))
        .env("CAPT_HOOKD_LOG", "info,capt_hookd::server::http=debug")
        .arg("-p")
        .args(match case.prompts {
            [one] => vec![*one],
            _ => vec!["--input-format", "stream-json"],
        })
        .args(["--output-format", "stream-json", "--verbose"])
        .arg("--include-hook-events")
        .arg("--strict-mcp-config")
        .arg("--plugin-dir")
        .arg(plugin)
        .arg("--debug-file")
        .arg(logs.join("debug.log"))
        .args(case.mode.args())
        .args(case.args)
        .args(if case.settings.is_empty() {
            vec![]
        } else {
            vec!["--settings", case.settings]
        })
        .stdin(if case.prompts.len() == 1 {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(file("stdout.jsonl")?)
        .stderr(file("stderr.txt")?);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", setup.claude.display()))?;
    // Several prompts: one stream-json user message each, and raw lines as they are; a raw
    // line (an SDK control request) waits until every prompt before it has its result, so it
    // lands between turns as a client's would. Closing stdin ends the session.
    let mut stdin = child.stdin.take();
    let mut pending: std::collections::VecDeque<(bool, String)> = if stdin.is_some() {
        case.prompts
            .iter()
            .map(|p| {
                if p.starts_with('{') {
                    (true, p.replace("{P}", &project.display().to_string()))
                } else {
                    let message = serde_json::json!({"type": "user", "message": {"role": "user", "content": p}});
                    (false, message.to_string())
                }
            })
            .collect()
    } else {
        Default::default()
    };
    let mut prompts_sent = 0;
    // The exit status is not a verdict: a turn that ends in an API error exits 1 by design.
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if Instant::now() < deadline => {}
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "Claude Code did not finish within {} s{}",
                    RUN_TIMEOUT.as_secs(),
                    if pending.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} input lines never sent)", pending.len())
                    }
                ));
            }
            Err(e) => return Err(format!("waiting for Claude Code: {e}")),
        }
        if let Some(input) = stdin.as_mut() {
            while let Some((raw, line)) = pending.front() {
                if *raw && results(&logs.join("stdout.jsonl")) < prompts_sent {
                    break;
                }
                if let Err(e) = writeln!(input, "{line}").and_then(|()| input.flush()) {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("writing the prompts: {e}"));
                }
                prompts_sent += usize::from(!*raw);
                pending.pop_front();
            }
            if pending.is_empty() {
                stdin = None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How many `result` messages (one per finished prompt) Claude Code has printed so far.
fn results(stdout: &Path) -> usize {
    read_lines(stdout)
        .iter()
        .filter(|v| v["type"] == "result")
        .count()
}

/// The `claude` an LLM hook's judge runs: the pinned CLI (not on PATH) pointed at this case's
/// fake API. The host (and so the worker's environment) outlives a case, while the fake API's
/// port is new each time; `CAPT_HOOK_CLAUDE_BIN` travels with each request, so a wrapper
/// carrying the URL reaches the judge.
fn judge_cli(setup: &Setup, base_url: &str, logs: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = logs.join("judge-claude.sh");
    let script = format!(
        "#!/bin/sh\nexport ANTHROPIC_BASE_URL='{base_url}' ANTHROPIC_API_KEY=dummy \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
         DISABLE_ERROR_REPORTING=1 IS_SANDBOX=1\nexec '{}' \"$@\"\n",
        setup.claude.display()
    );
    std::fs::write(&path, script)
        .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn save_requests(logs: &Path, requests: &[Request]) {
    let lines: Vec<String> = requests
        .iter()
        .map(|r| {
            serde_json::json!({"method": r.method, "path": r.path, "turn": r.turn, "body": r.body})
                .to_string()
        })
        .collect();
    let _ = std::fs::write(logs.join("requests.jsonl"), lines.join("\n"));
}

/// What one Claude Code run left behind, for the case's checks.
pub struct Outcome {
    /// The project root (Claude Code's cwd).
    pub project: PathBuf,
    /// Every request the fake API received.
    pub requests: Vec<Request>,
    /// Claude Code's stream-json output, one value per line.
    pub stream: Vec<Value>,
    /// Claude Code's debug log.
    pub debug: String,
    /// How our plugin answered.
    pub route: Route,
    /// One line per start of the plugin's `bin/hook`: its arguments.
    pub spawns: Vec<String>,
    /// The host's answers to the hooks module: (event, result JSON, passed on).
    pub mod_answers: Vec<(String, String, bool)>,
}

impl Outcome {
    /// The bodies of the agent-loop requests, in order.
    pub fn turns(&self) -> Vec<&Value> {
        api::turns(&self.requests)
    }

    /// The first turn (from 1) whose request contains `needle` anywhere, if any.
    pub fn first_sent(&self, needle: &str) -> Option<usize> {
        api::first_sent(&self.requests, needle)
    }

    /// Whether any request at all (side queries included) contains `needle`.
    pub fn ever_sent(&self, needle: &str) -> bool {
        self.requests
            .iter()
            .any(|r| r.body.to_string().contains(needle))
    }

    /// The `tool_result` answering `id` (its text, and whether it is an error), from the
    /// first request that carries it.
    pub fn tool_result(&self, id: &str) -> Option<(String, bool)> {
        self.turns().into_iter().find_map(|body| {
            body["messages"].as_array()?.iter().find_map(|m| {
                m["content"].as_array()?.iter().find_map(|block| {
                    (block["type"] == "tool_result" && block["tool_use_id"] == id).then(|| {
                        (
                            text_of(&block["content"]),
                            block["is_error"].as_bool() == Some(true),
                        )
                    })
                })
            })
        })
    }

    /// The text of the last message of turn `n`'s request (from 1).
    pub fn last_message(&self, n: usize) -> Option<(String, String)> {
        let body = self.turns().get(n.checked_sub(1)?).copied()?;
        let last = body["messages"].as_array()?.last()?;
        Some((
            last["role"].as_str().unwrap_or("").to_owned(),
            text_of(&last["content"]),
        ))
    }

    /// The final `result` text of the run, what a `-p` user sees last.
    pub fn result_text(&self) -> String {
        self.stream
            .iter()
            .rev()
            .find(|v| v["type"] == "result")
            .and_then(|v| v["result"].as_str())
            .unwrap_or("")
            .to_owned()
    }

    /// Whether `rel` exists in the project.
    pub fn exists(&self, rel: &str) -> bool {
        self.project.join(rel).exists()
    }

    /// What our plugin printed for each run of `event` (exit status, JSON), per Claude Code's
    /// debug log. A hook that prints JSON leaves "Parsed initial response: <json>" when its
    /// stdout arrives, and "<Event>[:…] [<command>] completed|finished with status N" when it
    /// exits; hooks run concurrently, so other hooks' lines can fall between the two (CI saw a
    /// PostToolUse finish there). The line right after a completion says whether that hook's
    /// output was JSON ("Hook output does not start with {" when not); a JSON one takes the
    /// oldest pending response naming its event (`hookEventName`), or else the oldest naming
    /// none.
    pub fn hook_outputs(&self, event: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        let lines: Vec<&str> = self
            .debug
            .lines()
            .map(|line| line.split_once("] ").map(|(_, r)| r).unwrap_or(line))
            .collect();
        for (i, rest) in lines.iter().enumerate() {
            if let Some(json) = rest.strip_prefix("Hooks: Parsed initial response: ") {
                pending.push(json.to_owned());
                continue;
            }
            let Some((head, status)) = rest
                .split_once(" completed with status ")
                .or_else(|| rest.split_once(" finished with status "))
            else {
                continue;
            };
            let head = head.strip_prefix("Hooks: ").unwrap_or(head);
            let name = head.split([' ', ':']).next().unwrap_or("");
            let plain = lines
                .get(i + 1)
                .is_some_and(|next| next.starts_with("Hook output does not start with {"));
            let taken = if plain {
                String::new()
            } else {
                let named = |j: &String| {
                    serde_json::from_str::<Value>(j).ok().and_then(|v| {
                        v["hookSpecificOutput"]["hookEventName"]
                            .as_str()
                            .map(str::to_owned)
                    })
                };
                pending
                    .iter()
                    .position(|j| named(j).as_deref() == Some(name))
                    .or_else(|| pending.iter().position(|j| named(j).is_none()))
                    .map(|at| pending.remove(at))
                    .unwrap_or_default()
            };
            if name == event {
                let status = status.split_whitespace().next().unwrap_or("?");
                out.push((status.to_owned(), taken));
            }
        }
        out
    }

    /// Claude Code's complaints about hook output (schema failures, ignored keys), from its
    /// debug log: each means a verdict of ours did not land as written.
    pub fn rejected_output(&self) -> Vec<String> {
        self.debug
            .lines()
            .filter(|l| {
                l.contains("Hook JSON output validation failed")
                    || l.contains("Hook JSON output had unrecognized keys")
                    // A result of our hooks module Claude Code refused (the hook was skipped);
                    // one that threw is skipped by design (the command hook answers then).
                    || (l.contains("captain-hook")
                        && l.contains("hook skipped")
                        && l.contains("wrong shape"))
            })
            .map(|l| {
                let l = l.split_once("] ").map(|(_, r)| r).unwrap_or(l);
                l.chars().take(300).collect()
            })
            .collect()
    }

    /// How many times `bin/hook` started, for what.
    fn spawn_summary(&self) -> String {
        let runs = self.spawns.iter().filter(|l| l.starts_with("run ")).count();
        let inits = self.spawns.iter().filter(|l| *l == "mod-init").count();
        let answered = self.mod_answers.iter().filter(|(_, _, p)| !p).count();
        let passed = self.mod_answers.len() - answered;
        format!(
            "bin/hook started {runs} time(s) for an event, {inits} for mod-init; the module \
             answered {answered} event(s), passed {passed} on"
        )
    }

    /// One line per hook the stream reports (event, exit code, stdout), for a failure's detail.
    fn hook_summary(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .stream
            .iter()
            .filter(|v| v["subtype"] == "hook_response")
            .map(|v| {
                format!(
                    "  {} exit {} -> {}",
                    v["hook_event"].as_str().unwrap_or("?"),
                    v["exit_code"],
                    v["stdout"].as_str().unwrap_or("").trim()
                )
            })
            .collect();
        lines.push(format!(
            "  model requests: {} (agent turns {})",
            self.requests.len(),
            self.turns().len()
        ));
        lines.push(format!("  result: {}", self.result_text().trim()));
        lines
    }
}

/// The text of a message `content` (a string, or blocks whose text is joined).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                b["text"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| text_of(&b["content"]))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_waiting_list_names_an_issue_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("waiting");
        std::fs::write(&file, "# header\n\nsetup [mod] # issue 32: why\n").unwrap();
        assert_eq!(
            super::read_waiting(&file).unwrap(),
            vec![("setup [mod]".to_owned(), "issue 32: why".to_owned())]
        );
        std::fs::write(&file, "setup [mod]\n").unwrap();
        let e = super::read_waiting(&file).unwrap_err().to_string();
        assert!(e.contains("waiting:1"), "{e}");
    }

    use super::*;

    fn outcome(debug: &str) -> Outcome {
        Outcome {
            project: PathBuf::new(),
            requests: Vec::new(),
            stream: Vec::new(),
            debug: debug.to_owned(),
            route: Route::Command,
            spawns: Vec::new(),
            mod_answers: Vec::new(),
        }
    }

    /// Both line shapes Claude Code 2.1.332 logs, a hook without JSON output, and complaints.
    #[test]
    fn debug_log_lines_become_hook_outputs_and_rejections() {
        let o = outcome(
            "2026-12-01T14:00:00.000Z [DEBUG] Hooks: Parsed initial response: {\"systemMessage\":\"a\"}\n\
             2026-12-01T14:00:00.001Z [DEBUG] Hooks: PostToolUse:Bash [\"x/bin/hook\" run PostToolUse] (plugin p@inline) finished with status 0 (4ms)\n\
             2026-12-01T14:00:00.002Z [DEBUG] Hook JSON output had unrecognized keys (ignored): hookSpecificOutput.permissionDecision.\n\
             2026-12-01T14:00:00.003Z [DEBUG] CwdChanged [\"x/bin/hook\" run CwdChanged] completed with status 2\n\
             2026-12-01T14:00:00.004Z [DEBUG] Hooks: Parsed initial response: {\"systemMessage\":\"b\"}\n\
             2026-12-01T14:00:00.005Z [DEBUG] CwdChanged [\"x/bin/hook\" run CwdChanged] completed with status 0\n",
        );
        assert_eq!(
            o.hook_outputs("PostToolUse"),
            [("0".to_owned(), "{\"systemMessage\":\"a\"}".to_owned())]
        );
        assert_eq!(
            o.hook_outputs("CwdChanged"),
            [
                ("2".to_owned(), String::new()),
                ("0".to_owned(), "{\"systemMessage\":\"b\"}".to_owned())
            ]
        );
        assert!(o.hook_outputs("Stop").is_empty());
        let rejected = o.rejected_output();
        assert_eq!(rejected.len(), 1);
        assert!(rejected[0].starts_with("Hook JSON output had unrecognized keys"));
    }

    /// A response parsed before another hook's completion line still belongs to its own hook
    /// (the order CI logged for CwdChanged beside PostToolUse and a settings `true` hook).
    #[test]
    fn interleaved_hooks_keep_their_own_output() {
        let o = outcome(
            "2026-12-01T14:00:00.000Z [DEBUG] Hooks: Parsed initial response: {\"systemMessage\":\"E2E-CWD moved\"}\n\
             2026-12-01T14:00:00.001Z [DEBUG] Hooks: PostToolUse:Bash [x/bin/hook run PostToolUse] (plugin p@inline) finished with status 0 (40ms)\n\
             2026-12-01T14:00:00.001Z [DEBUG] Hook output does not start with {, treating as plain text\n\
             2026-12-01T14:00:00.002Z [DEBUG] CwdChanged [true] completed with status 0\n\
             2026-12-01T14:00:00.002Z [DEBUG] Hook output does not start with {, treating as plain text\n\
             2026-12-01T14:00:00.003Z [DEBUG] Hooks: Parsed initial response: {\"hookSpecificOutput\":{\"hookEventName\":\"PostToolBatch\"}}\n\
             2026-12-01T14:00:00.004Z [DEBUG] CwdChanged [x/bin/hook run CwdChanged] completed with status 0\n\
             2026-12-01T14:00:00.004Z [DEBUG] Successfully parsed and validated hook JSON output\n",
        );
        assert_eq!(
            o.hook_outputs("CwdChanged"),
            [
                ("0".to_owned(), String::new()),
                (
                    "0".to_owned(),
                    "{\"systemMessage\":\"E2E-CWD moved\"}".to_owned()
                )
            ]
        );
        assert_eq!(
            o.hook_outputs("PostToolUse"),
            [("0".to_owned(), String::new())]
        );
    }

    /// The report shapes `claude plugin validate --json` prints in 2.1.332: a clean one, and
    /// one with a guard entry Claude Code cannot load.
    #[test]
    fn validation_reports_fail_on_any_error() {
        let clean = serde_json::json!({
            "success": true,
            "manifest": {"file": "m.json", "errors": [], "warnings": [{"path": "author"}]},
            "contents": [{"file": "plugin.json", "errors": [], "warnings": [{"path": "author"}]}],
            "provides": {"hooks": [{"event": "PreToolUse"}, {"event": "Stop"}]}
        });
        assert_eq!(
            validation_verdict(&clean, true).unwrap(),
            "claude plugin validate: the installed plugin loads (2 hooks, 2 warnings)"
        );
        assert!(validation_verdict(&clean, false).is_err());
        let broken = serde_json::json!({
            "success": false,
            "manifest": {"file": "m.json", "errors": [], "warnings": []},
            "contents": [{"file": "hooks/hooks.json", "errors": [
                {"path": "hooks", "message": "hooks.PreToolUse.0.hooks.0: Invalid command hook"}
            ], "warnings": []}]
        });
        let err = validation_verdict(&broken, false).unwrap_err();
        assert_eq!(
            err,
            "hooks/hooks.json: hooks: hooks.PreToolUse.0.hooks.0: Invalid command hook"
        );
        let mut silent = clean.clone();
        silent["success"] = false.into();
        assert!(
            validation_verdict(&silent, true)
                .unwrap_err()
                .contains("without naming an error")
        );
    }

    #[test]
    fn tool_results_and_messages_are_read_from_the_turns() {
        let body = serde_json::json!({"tools": [{}], "messages": [
            {"role": "user", "content": "go"},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_e2e_1_2", "is_error": true,
                 "content": [{"type": "text", "text": "BLOCKED: no"}]},
                {"type": "text", "text": "<system-reminder>ctx</system-reminder>"}
            ]}
        ]});
        let mut o = outcome("");
        o.requests.push(Request {
            method: "POST".into(),
            path: "/v1/messages".into(),
            body,
            turn: true,
        });
        assert_eq!(
            o.tool_result("toolu_e2e_1_2"),
            Some(("BLOCKED: no".to_owned(), true))
        );
        assert_eq!(o.tool_result("toolu_e2e_9_9"), None);
        let (role, text) = o.last_message(1).expect("turn 1");
        assert_eq!(role, "user");
        assert!(
            text.contains("BLOCKED: no") && text.contains("ctx"),
            "{text}"
        );
        assert_eq!(o.first_sent("ctx"), Some(1));
        assert_eq!(o.first_sent("absent"), None);
    }
}
