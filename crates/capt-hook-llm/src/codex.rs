//! The Codex CLI as a judge: `codex exec` with the prompt on stdin and `--output-schema` naming
//! a temporary file that holds the verdict's JSON Schema; the final message is the verdict.

use std::time::Instant;

use serde_json::Value;

use crate::process;
use crate::{Answer, Backend, Call, CallError, CallErrorKind, Size};

/// The `codex` CLI backend.
#[derive(Debug, Clone)]
pub struct Codex {
    /// The program (`codex`, or a path).
    pub program: String,
    /// Model names for small, medium and large.
    pub models: [String; 3],
}

impl Default for Codex {
    fn default() -> Codex {
        Codex {
            program: "codex".into(),
            models: [
                "gpt-5.3-codex-spark".into(),
                "gpt-5.4-mini".into(),
                "gpt-5.5".into(),
            ],
        }
    }
}

impl Codex {
    /// The model name for `size`.
    pub fn model(&self, size: Size) -> &str {
        &self.models[size as usize]
    }

    /// The arguments for `call` with the schema file at `schema_path`; `-` reads the prompt
    /// from stdin.
    pub fn argv(&self, call: &Call<'_>, schema_path: &str) -> Vec<String> {
        let mut argv: Vec<String> = [
            self.program.as_str(),
            "exec",
            "--ephemeral",
            "--sandbox",
            "read-only",
            "--skip-git-repo-check",
            "--model",
            self.model(call.size),
            "--output-schema",
            schema_path,
        ]
        .map(String::from)
        .to_vec();
        if !call.agent {
            argv.extend(
                [
                    "-c",
                    "features.codex_hooks=false",
                    "-c",
                    "features.mcp_servers=false",
                ]
                .map(String::from),
            );
        }
        argv.push("-".into());
        argv
    }
}

impl Backend for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn judge(&self, call: &Call<'_>) -> Result<Answer, CallError> {
        let started = Instant::now();
        let schema_file = tempfile::Builder::new()
            .prefix("capt-hook-schema-")
            .suffix(".json")
            .tempfile()
            .and_then(|f| {
                std::fs::write(f.path(), call.schema.to_json().to_string())?;
                Ok(f)
            })
            .map_err(|e| CallError {
                backend: "codex",
                kind: CallErrorKind::NotConfigured(format!("cannot write the schema file: {e}")),
                record: Box::new(process::record(
                    "codex",
                    std::slice::from_ref(&self.program),
                    call.prompt,
                )),
            })?;
        let argv = self.argv(call, &schema_file.path().display().to_string());
        let done = process::run(
            "codex",
            &argv,
            call.prompt,
            call.cwd.as_deref(),
            &[crate::claude::JUDGE_MARK],
            call.deadline,
            call.prompt,
        )?;
        if !done.status.success() {
            return Err(process::exit_error("codex", &argv, call.prompt, &done));
        }
        let value = last_json(&done.stdout).ok_or_else(|| {
            process::bad_output(
                "codex",
                &argv,
                call.prompt,
                &done,
                "no JSON object on stdout",
            )
        })?;
        let verdict = call
            .schema
            .validate(&value)
            .map_err(|why| process::bad_output("codex", &argv, call.prompt, &done, why))?;
        Ok(Answer {
            verdict,
            backend: "codex",
            model: Some(self.model(call.size).to_owned()),
            latency: started.elapsed(),
            cost_usd: None,
        })
    }
}

/// The whole of stdout as JSON, else its last line that is a JSON object (progress lines may
/// come first).
fn last_json(stdout: &str) -> Option<Value> {
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(stdout.trim()) {
        return Some(v);
    }
    stdout
        .lines()
        .rev()
        .find_map(|l| match serde_json::from_str::<Value>(l.trim()) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VerdictSchema;
    use crate::test_support::{call, fake_cli};
    use std::time::Duration;

    #[test]
    fn a_fake_codex_reads_the_schema_file_and_answers() {
        let dir = tempfile::tempdir().unwrap();
        // Finds the schema file after --output-schema and checks it is the nudge schema.
        let bin = fake_cli(
            dir.path(),
            r#"while [ "$1" != "--output-schema" ]; do shift; done
grep -q '"fire"' "$2" || { echo "schema missing" >&2; exit 4; }
cat > /dev/null
echo 'thinking...'
echo '{"fire": true, "reasoning": "seen"}'"#,
        );
        let c = Codex {
            program: bin,
            ..Codex::default()
        };
        let schema = VerdictSchema::nudge();
        let a = c
            .judge(&call("p", &schema, Duration::from_secs(10)))
            .unwrap();
        assert_eq!(a.verdict["fire"], true);
        assert_eq!(a.model.as_deref(), Some("gpt-5.3-codex-spark"));

        let argv = c.argv(&call("p", &schema, Duration::from_secs(1)), "/s.json");
        assert!(argv.windows(2).any(|w| w == ["--sandbox", "read-only"]));
        assert_eq!(argv.last().map(String::as_str), Some("-"));
        assert!(argv.iter().any(|a| a == "features.codex_hooks=false"));
    }

    #[test]
    fn a_failing_codex_is_an_error_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let c = Codex {
            program: fake_cli(dir.path(), "echo 'not logged in' >&2; exit 1"),
            ..Codex::default()
        };
        let schema = VerdictSchema::nudge();
        let e = c
            .judge(&call("p", &schema, Duration::from_secs(10)))
            .unwrap_err();
        assert_eq!(e.record.exit_code, Some(1));
        assert!(e.record.stderr_tail.contains("not logged in"));
        let c = Codex {
            program: fake_cli(dir.path(), "echo '{\"fire\": 1}'"),
            ..Codex::default()
        };
        let e = c
            .judge(&call("p", &schema, Duration::from_secs(10)))
            .unwrap_err();
        assert!(matches!(e.kind, CallErrorKind::BadOutput(_)), "{e}");
    }
}
