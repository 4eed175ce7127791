//! `cargo xtask e2e-agents [--only codex|gemini|CASE]... [--bins DIR]`: the real OpenAI Codex
//! CLI and Google Gemini CLI (pinned, from the npm registry) run headless against a scripted fake
//! model API of ours on loopback, with `capt-hook install --agent <agent>` having written their
//! hook configuration into each case's project. Each case asserts what the model was sent next
//! (a refusal, a warning, a Stop gate's reason) and what happened on disk, then uninstalls and
//! checks the project's own hooks were left as they were.
//!
//! The binaries are debug builds (`--bins`, else built here), so no release build is needed.
//! Like `e2e-claude`, the run re-enters itself in a network namespace with only loopback when
//! it can. A CLI that cannot run fails the suite; nothing is skipped.

mod cases;
mod codex;
mod gemini;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use super::api::{self, Block, FakeApi, Reply, Request, Wire, tool_id};
use crate::sandbox::Sandbox;
use cases::{Case, Step};

/// How long one agent run may take before the case fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The binaries the suite runs: the client the agents start, the host and worker it starts, and
/// the CLI that installs the hooks and checks the project's hook files.
const BINS: [&str; 4] = ["hook", "capt-hookd", "capt-hook-worker", "capt-hook"];

/// The usage line.
const USAGE: &str = "usage: e2e-agents [--only codex|gemini|CASE]... [--bins DIR]";

/// An agent CLI the suite drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Codex,
    Gemini,
}

impl Agent {
    const ALL: [Agent; 2] = [Agent::Codex, Agent::Gemini];

    /// The name `--agent` and `--only` take.
    fn tag(self) -> &'static str {
        match self {
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// The model API it speaks.
    fn wire(self) -> Wire {
        match self {
            Agent::Codex => Wire::Responses,
            Agent::Gemini => Wire::Gemini,
        }
    }

    /// Its pinned version, for the report.
    fn version(self) -> &'static str {
        match self {
            Agent::Codex => codex::VERSION,
            Agent::Gemini => gemini::VERSION,
        }
    }

    /// The model's shell call for `command`, in this agent's tool and argument names.
    fn shell_call(self, command: &str) -> Block {
        let (name, input) = match self {
            Agent::Codex => ("exec_command", serde_json::json!({"cmd": command})),
            Agent::Gemini => ("run_shell_command", serde_json::json!({"command": command})),
        };
        Block::Tool {
            name: name.into(),
            input,
        }
    }

    /// The model's call of the file-writing tool: Gemini's `write_file`; Codex's `apply_patch`,
    /// a freeform tool whose input is the patch text (a patch adding the file).
    fn write_call(self, path: &str, content: &str) -> Block {
        match self {
            Agent::Codex => {
                let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
                Block::Tool {
                    name: "apply_patch".into(),
                    input: Value::String(format!(
                        "*** Begin Patch\n*** Add File: {path}\n{added}*** End Patch\n"
                    )),
                }
            }
            Agent::Gemini => Block::Tool {
                name: "write_file".into(),
                input: serde_json::json!({"file_path": path, "content": content}),
            },
        }
    }

    /// The project file `capt-hook install --agent` writes.
    fn config_file(self) -> &'static str {
        match self {
            Agent::Codex => ".codex/hooks.json",
            Agent::Gemini => ".gemini/settings.json",
        }
    }

    /// A hook of the project's own in that file, which uninstall must leave as it was; it runs
    /// `true` on an event where that changes nothing.
    fn their_hooks(self) -> Value {
        match self {
            Agent::Codex => serde_json::json!({"hooks": {"SessionStart": [
                {"hooks": [{"type": "command", "command": "true", "timeout": 5}]}
            ]}}),
            Agent::Gemini => serde_json::json!({"hooks": {"SessionEnd": [
                {"hooks": [{"type": "command", "command": "true", "timeout": 5000}]}
            ]}}),
        }
    }
}

/// What the cases need, handed from the outer process to the one in the network namespace.
struct Setup {
    sandbox: PathBuf,
    bins: PathBuf,
    logs: PathBuf,
    /// Each selected agent with its CLI (for Gemini, its entry script).
    agents: Vec<(Agent, PathBuf)>,
    /// Case-name filters (`--only` values that are not an agent's name).
    only: Vec<String>,
}

impl Setup {
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--inside".into(),
            self.sandbox.display().to_string(),
            "--bins".into(),
            self.bins.display().to_string(),
            "--logs".into(),
            self.logs.display().to_string(),
        ];
        for (agent, cli) in &self.agents {
            args.extend([format!("--{}", agent.tag()), cli.display().to_string()]);
        }
        for o in &self.only {
            args.extend(["--only".into(), o.clone()]);
        }
        args
    }
}

/// Entry point (see the module's doc).
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let mut only = Vec::new();
    let mut agents_named = Vec::new();
    let (mut inside, mut bins, mut logs) = (None, None, None);
    let mut clis = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if ![
            "--only", "--bins", "--inside", "--logs", "--codex", "--gemini",
        ]
        .contains(&arg.as_str())
        {
            bail!("e2e-agents: unknown argument {arg:?} ({USAGE})");
        }
        let Some(value) = it.next() else {
            bail!("e2e-agents: {arg} needs a value ({USAGE})");
        };
        match arg.as_str() {
            "--only" => match Agent::ALL.iter().find(|a| a.tag() == value) {
                Some(agent) => agents_named.push(*agent),
                None => only.push(value.clone()),
            },
            "--bins" => bins = Some(PathBuf::from(value)),
            "--inside" => inside = Some(PathBuf::from(value)),
            "--logs" => logs = Some(PathBuf::from(value)),
            "--codex" => clis.push((Agent::Codex, PathBuf::from(value))),
            "--gemini" => clis.push((Agent::Gemini, PathBuf::from(value))),
            _ => {}
        }
    }
    if let Some(sandbox) = inside {
        let setup = Setup {
            sandbox,
            bins: bins.context("--inside needs --bins")?,
            logs: logs.context("--inside needs --logs")?,
            agents: clis,
            only,
        };
        return run_cases(&setup);
    }

    let agents: Vec<Agent> = if agents_named.is_empty() {
        Agent::ALL.to_vec()
    } else {
        Agent::ALL
            .into_iter()
            .filter(|a| agents_named.contains(a))
            .collect()
    };
    selected(&only)?;
    let started = Instant::now();
    let target = crate::target_dir()?;
    let bins = match bins {
        Some(dir) => dir,
        None => build_debug()?,
    };
    let bins = bins
        .canonicalize()
        .with_context(|| format!("--bins {}", bins.display()))?;
    for name in BINS {
        if !bins.join(name).is_file() {
            bail!(
                "e2e-agents: {} is missing (build the debug binaries, or name their directory \
                 with --bins)",
                bins.join(name).display()
            );
        }
    }
    let cache = crate::workspace::download_cache(&target, "e2e-agents");
    let mut clis = Vec::new();
    for agent in &agents {
        let cli = match agent {
            Agent::Codex => codex::ensure(&cache)?,
            Agent::Gemini => gemini::ensure(&cache)?,
        };
        clis.push((*agent, cli));
    }
    let sandbox = Sandbox::new(&bins, "e2e-agents")?;
    let logs = target.join("e2e-agents/logs");
    let _ = std::fs::remove_dir_all(&logs);
    let setup = Setup {
        sandbox: sandbox.dir.clone(),
        bins,
        logs,
        agents: clis,
        only,
    };
    println!(
        "e2e-agents: {} with the debug binaries in {} (setup {:.1} s)",
        agents
            .iter()
            .map(|a| format!("{} {}", a.tag(), a.version()))
            .collect::<Vec<_>>()
            .join(", "),
        setup.bins.display(),
        started.elapsed().as_secs_f64()
    );
    let result = super::isolated("e2e-agents", &sandbox.dir, &setup.to_args(), || {
        run_cases(&setup)
    });
    drop(sandbox);
    println!(
        "e2e-agents: total {:.1} s; logs in {}",
        started.elapsed().as_secs_f64(),
        setup.logs.display()
    );
    result
}

/// The debug build of the four binaries; their directory.
fn build_debug() -> anyhow::Result<PathBuf> {
    crate::run_cargo(&[
        "build",
        "-p",
        "capt-hook-client",
        "-p",
        "capt-hookd",
        "-p",
        "capt-hook-worker",
        "-p",
        "capt-hook-cli",
    ])?;
    Ok(crate::target_dir()?.join("debug"))
}

/// The cases whose name contains one of `only` (all when it is empty); an error when none does.
fn selected(only: &[String]) -> anyhow::Result<Vec<Case>> {
    let cases: Vec<Case> = cases::all()
        .into_iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| c.name.contains(o.as_str())))
        .collect();
    if cases.is_empty() {
        bail!("e2e-agents: no case name contains any of {only:?}");
    }
    Ok(cases)
}

/// Runs every selected case with every selected agent; fails when any did.
fn run_cases(setup: &Setup) -> anyhow::Result<()> {
    if setup.agents.is_empty() {
        bail!("e2e-agents: no agent CLI to run");
    }
    let sandbox = Sandbox::attach(&setup.sandbox, &setup.bins);
    let cases = selected(&setup.only)?;
    let mut failed = Vec::new();
    let mut runs = 0;
    for (agent, cli) in &setup.agents {
        for case in cases.iter().filter(|c| c.only.is_none_or(|a| a == *agent)) {
            runs += 1;
            let started = Instant::now();
            let name = format!("{} [{}]", case.name, agent.tag());
            let verdict = run_case(setup, &sandbox, *agent, cli, case);
            let secs = started.elapsed().as_secs_f64();
            match verdict {
                Ok(()) => println!("PASS  {name:<28} {secs:5.1} s  {}", case.about),
                Err(detail) => {
                    println!("FAIL  {name:<28} {secs:5.1} s  {}", case.about);
                    for line in detail.lines() {
                        println!("        {line}");
                    }
                    failed.push(name);
                }
            }
        }
    }
    println!(
        "{runs} runs: {} passed, {} failed",
        runs - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        bail!("failed: {}", failed.join(", "));
    }
    Ok(())
}

/// One case with one agent: project, hooks installed, fake API, one headless run, the case's
/// checks, then uninstall. The error is the detail to print.
fn run_case(
    setup: &Setup,
    sandbox: &Sandbox,
    agent: Agent,
    cli: &Path,
    case: &Case,
) -> Result<(), String> {
    let dir_name = format!("{}-{}", agent.tag(), case.name);
    let project = if case.hooks.is_empty() {
        let root = sandbox.dir.join("projects").join(&dir_name);
        std::fs::create_dir_all(&root)
            .map(|()| root)
            .map_err(anyhow::Error::from)
    } else {
        sandbox.project(&dir_name, &[("e2e.toml", case.hooks)])
    }
    .map_err(|e| format!("creating the project: {e:#}"))?;
    // From here on the project is reached only through the link, as a user who opened it so.
    let project = if case.link {
        let link = project.with_file_name(format!("{dir_name}-link"));
        std::os::unix::fs::symlink(&project, &link)
            .map_err(|e| format!("linking {} to the project: {e}", link.display()))?;
        link
    } else {
        project
    };
    for (rel, text) in case.files {
        write(&project.join(rel), text)?;
    }
    if !case.setup.is_empty() {
        let out = sandbox
            .shell(case.setup)
            .current_dir(&project)
            .output()
            .map_err(|e| format!("running the case's setup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the case's setup failed ({}):\n{}",
                out.status,
                both(&out)
            ));
        }
    }
    // A hook file that does not load would make every "nothing reached the model" check pass.
    capt_hook(sandbox, &project, &["check"], &[])?;
    let config = project.join(agent.config_file());
    let theirs = agent.their_hooks();
    write(&config, &theirs.to_string())?;
    let logs = setup.logs.join(agent.tag()).join(case.name);
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    // Codex keeps the user's trust in hooks in its own home: install records it there.
    let agent_env: Vec<(&str, PathBuf)> = match agent {
        Agent::Codex => vec![("CODEX_HOME", codex::home(&logs))],
        Agent::Gemini => Vec::new(),
    };
    let hook = setup.bins.join("hook");
    capt_hook(
        sandbox,
        &project,
        &[
            "install",
            "--agent",
            agent.tag(),
            "--hook",
            &hook.display().to_string(),
        ],
        &agent_env,
    )?;

    let script: Vec<Reply> = case
        .script
        .iter()
        .map(|step| match step {
            Step::Shell(command) => Reply::Blocks(vec![
                Block::Text("On it.".into()),
                agent.shell_call(command),
            ]),
            Step::Say(text) => Reply::Blocks(vec![Block::Text((*text).into())]),
            Step::Write(path, content) => Reply::Blocks(vec![
                Block::Text("On it.".into()),
                agent.write_call(path, content),
            ]),
        })
        .collect();
    let api = FakeApi::start_wire(agent.wire(), script)
        .map_err(|e| format!("starting the fake API: {e}"))?;
    let base_url = api.base_url();
    let home = sandbox.dir.join("home");
    // Each prompt is one headless run; a later one resumes the session the first started.
    let mut ran = Ok(());
    let mut stderr = String::new();
    for (n, prompt) in std::iter::once(case.prompt)
        .chain(case.then.iter().copied())
        .enumerate()
    {
        let resume = n > 0;
        let command = match agent {
            Agent::Codex => codex::command(cli, &project, &base_url, &logs, prompt, resume),
            Agent::Gemini => gemini::command(cli, &home, &project, &base_url, prompt, resume),
        }?;
        let suffix = if resume {
            format!("-{}", n + 1)
        } else {
            String::new()
        };
        ran = ran.and_then(|()| run_agent(command, &logs, &home, &suffix));
        stderr.push_str(
            &std::fs::read_to_string(logs.join(format!("stderr{suffix}.txt"))).unwrap_or_default(),
        );
    }
    let outcome = Outcome {
        agent,
        project: project.clone(),
        requests: api.requests(),
        stderr,
    };
    drop(api);
    super::save_requests(&logs, &outcome.requests);
    let unserved: Vec<String> = outcome
        .requests
        .iter()
        .filter(|r| !super::api::served_by(agent.wire(), &r.path))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    let checked = ran
        .and_then(|()| (case.check)(&outcome))
        .and_then(|()| uninstalled(sandbox, agent, &project, &config, &theirs, &agent_env));
    checked.map_err(|detail| {
        let mut out = detail;
        out.push_str(&format!(
            "\n  model requests: {} (agent turns {})",
            outcome.requests.len(),
            outcome.turns().len()
        ));
        for request in unserved {
            out.push_str(&format!("\n  the fake API refused {request}"));
        }
        out.push_str(&format!("\nlogs: {}", logs.display()));
        out
    })
}

/// `capt-hook uninstall --agent` leaves the project's own hooks exactly as they were, and takes
/// back Codex's trust in ours.
fn uninstalled(
    sandbox: &Sandbox,
    agent: Agent,
    project: &Path,
    config: &Path,
    theirs: &Value,
    agent_env: &[(&str, PathBuf)],
) -> Result<(), String> {
    capt_hook(
        sandbox,
        project,
        &["uninstall", "--agent", agent.tag()],
        agent_env,
    )?;
    if let Some((_, codex_home)) = agent_env.iter().find(|(k, _)| *k == "CODEX_HOME") {
        let path = codex_home.join("config.toml");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("trusted_hash") {
            return Err(format!(
                "uninstall left trust in {}:\n{text}",
                path.display()
            ));
        }
    }
    let text = std::fs::read_to_string(config)
        .map_err(|e| format!("after uninstall, {}: {e}", config.display()))?;
    let left: Value = serde_json::from_str(&text)
        .map_err(|e| format!("after uninstall, {} is not JSON: {e}", config.display()))?;
    if &left == theirs {
        Ok(())
    } else {
        Err(format!(
            "uninstall did not leave the project's own hooks as they were: {left}"
        ))
    }
}

/// `capt-hook --root <project> <args>` in the sandbox; an error holds its output.
fn capt_hook(
    sandbox: &Sandbox,
    project: &Path,
    args: &[&str],
    env: &[(&str, PathBuf)],
) -> Result<(), String> {
    let out = sandbox
        .command("capt-hook")
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .arg("--root")
        .arg(project)
        .args(args)
        .current_dir(project)
        .output()
        .map_err(|e| format!("running capt-hook {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "capt-hook {} failed ({}):\n{}",
            args.join(" "),
            out.status,
            both(&out)
        ))
    }
}

fn both(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs an agent's prepared command with a clean environment of the sandbox's (the agent
/// module adds its own variables), stdout and stderr to `logs` (`stdout<suffix>.txt`), within
/// [`RUN_TIMEOUT`]. The exit status is not a verdict: the checks read what the model was sent.
fn run_agent(mut cmd: Command, logs: &Path, home: &Path, suffix: &str) -> Result<(), String> {
    let file = |name: &str| {
        std::fs::File::create(logs.join(name)).map_err(|e| format!("{}: {e}", logs.display()))
    };
    let sandbox = home.parent().unwrap_or(home);
    cmd.env(
        "PATH",
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    )
    .env("LANG", "C.UTF-8")
    .env("TERM", "dumb")
    .env("HOME", home)
    .env("TMPDIR", sandbox.join("tmp"))
    .env("XDG_RUNTIME_DIR", sandbox.join("run"))
    .stdin(Stdio::null())
    .stdout(file(&format!("stdout{suffix}.txt"))?)
    .stderr(file(&format!("stderr{suffix}.txt"))?);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the agent did not finish within {} s",
                    RUN_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for the agent: {e}")),
        }
    }
}

/// What one agent run left behind, for the case's checks.
pub struct Outcome {
    pub agent: Agent,
    /// The project root (the agent's working directory).
    pub project: PathBuf,
    /// Every request the fake API received.
    pub requests: Vec<Request>,
    /// What the agent printed on stderr, where both show the user a hook's notice.
    pub stderr: String,
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

    /// What the model was given back for the tool call of scripted turn `turn` (from 1): Codex's
    /// `function_call_output` (`custom_tool_call_output` for a freeform tool) for that call id,
    /// Gemini's `functionResponse` in the request that followed it.
    pub fn tool_output(&self, turn: usize) -> Option<String> {
        match self.agent {
            Agent::Codex => {
                let id = tool_id(turn, 2);
                self.turns().into_iter().find_map(|body| {
                    body["input"].as_array()?.iter().find_map(|item| {
                        let output = matches!(
                            item["type"].as_str(),
                            Some("function_call_output" | "custom_tool_call_output")
                        );
                        (output && item["call_id"] == id.as_str()).then(|| text(&item["output"]))
                    })
                })
            }
            Agent::Gemini => {
                let body = self.turns().get(turn).copied()?;
                let last = body["contents"].as_array()?.last()?;
                last["parts"]
                    .as_array()?
                    .iter()
                    .find_map(|p| p.get("functionResponse").map(|r| r["response"].to_string()))
            }
        }
    }

    /// The text of the last message the model was sent in turn `n` (from 1).
    pub fn last_input(&self, n: usize) -> Option<String> {
        let body = self.turns().get(n.checked_sub(1)?).copied()?;
        let last = match self.agent {
            Agent::Codex => body["input"].as_array()?.last()?,
            Agent::Gemini => body["contents"].as_array()?.last()?,
        };
        Some(last.to_string())
    }

    /// Whether `rel` exists in the project.
    pub fn exists(&self, rel: &str) -> bool {
        self.project.join(rel).exists()
    }
}

/// A string as it is, anything else as JSON.
fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}
