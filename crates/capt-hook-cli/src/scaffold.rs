//! `capt-hook init`: a first hook file with passing tests.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

/// The scaffolded hook file.
pub const EXAMPLE: &str = r#"#:schema https://raw.githubusercontent.com/captain-hook-rs/captain-hook/main/docs/hooks.schema.json
# Hooks for this project. Run `capt-hook test` to check them.

[[hook]]
kind = "block_command"
name = "no-force-push"
argv = ["git", "push", "--force|-f"]
reason = "Force-pushing rewrites history others may have pulled"
hint = "Use git push --force-with-lease"

  [[hook.test]]
  input = { command = "git push --force origin main" }
  expect = "block"
  pattern = "force-with-lease"

  [[hook.test]]
  input = { command = "echo 'git push --force'" }
  expect = "allow"

[[hook]]
kind = "rewrite_command"
name = "lease"
pattern = 'git push --force\b(?!-)'
replace = "git push --force-with-lease"
note = "Rewrote to --force-with-lease"

  [[hook.test]]
  input = { command = "git push --force" }
  expect = "rewrite"
  pattern = "--force-with-lease"
"#;

/// Writes `<root>/.claude/hooks/example.toml` unless it exists.
pub fn init(root: &Path) -> anyhow::Result<ExitCode> {
    let dir = root.join(".claude").join("hooks");
    let path = dir.join("example.toml");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path);
    match file {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(EXAMPLE.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            println!("Created {}", path.display());
            println!("Next: capt-hook test");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            eprintln!("{} already exists; not overwritten", path.display());
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}
