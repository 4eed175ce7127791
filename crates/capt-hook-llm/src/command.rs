//! Any program as a judge: it reads one JSON request on stdin,
//! `{"prompt": …, "schema": {…}, "model": "small", "agent": false}`, and prints the verdict
//! object on stdout. The way to plug in a local model, a proxy or a company gateway.

use std::time::Instant;

use serde_json::json;

use crate::process;
use crate::{Answer, Backend, Call, CallError};

/// A command backend: `argv[0]` run with the rest as arguments.
#[derive(Debug, Clone)]
pub struct CommandBackend {
    /// The program and its arguments.
    pub argv: Vec<String>,
}

impl CommandBackend {
    /// The request the program reads.
    pub fn request(call: &Call<'_>) -> String {
        json!({
            "prompt": call.prompt,
            "schema": call.schema.to_json(),
            "model": call.size.name(),
            "agent": call.agent,
        })
        .to_string()
    }
}

impl Backend for CommandBackend {
    fn name(&self) -> &'static str {
        "command"
    }

    fn judge(&self, call: &Call<'_>) -> Result<Answer, CallError> {
        let started = Instant::now();
        let done = process::run(
            "command",
            &self.argv,
            &CommandBackend::request(call),
            call.cwd.as_deref(),
            &[crate::claude::JUDGE_MARK],
            call.deadline,
            call.prompt,
        )?;
        if !done.status.success() {
            return Err(process::exit_error(
                "command",
                &self.argv,
                call.prompt,
                &done,
            ));
        }
        let value = serde_json::from_str(done.stdout.trim()).map_err(|e| {
            process::bad_output(
                "command",
                &self.argv,
                call.prompt,
                &done,
                format!("stdout is not JSON ({e})"),
            )
        })?;
        let verdict = call
            .schema
            .validate(&value)
            .map_err(|why| process::bad_output("command", &self.argv, call.prompt, &done, why))?;
        Ok(Answer {
            verdict,
            backend: "command",
            model: None,
            latency: started.elapsed(),
            cost_usd: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{call, fake_cli};
    use crate::{CallErrorKind, VerdictSchema};
    use std::time::Duration;

    #[test]
    fn the_program_reads_the_request_and_its_verdict_is_validated() {
        let dir = tempfile::tempdir().unwrap();
        // Blocks exactly when the request carries the prompt, the schema and the model tier.
        let bin = fake_cli(
            dir.path(),
            r#"req=$(cat)
case "$req" in
  *'"prompt":"is it bad?"'*'"additionalProperties":false'*'"model":"small"'*) echo '{"block": true, "reasoning": "yes"}' ;;
  *) echo '{"block": false, "reasoning": "request not seen"}' ;;
esac"#,
        );
        let b = CommandBackend {
            argv: vec![bin, "--flag".into()],
        };
        let schema = VerdictSchema::gate();
        let a = b
            .judge(&call("is it bad?", &schema, Duration::from_secs(10)))
            .unwrap();
        assert_eq!(a.verdict["block"], true, "{:?}", a.verdict);
        assert_eq!(a.backend, "command");

        let e = CommandBackend {
            argv: vec![fake_cli(dir.path(), "echo nope")],
        }
        .judge(&call("p", &schema, Duration::from_secs(10)))
        .unwrap_err();
        assert!(matches!(e.kind, CallErrorKind::BadOutput(_)), "{e}");
        let e = CommandBackend { argv: vec![] }
            .judge(&call("p", &schema, Duration::from_secs(10)))
            .unwrap_err();
        assert!(matches!(e.kind, CallErrorKind::NotConfigured(_)), "{e}");
    }
}
