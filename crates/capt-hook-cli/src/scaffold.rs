//! `capt-hook init`: a first hook file with passing tests.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

/// The scaffolded hook file, after its `#:schema` line ([`schema_line`]).
pub const EXAMPLE: &str = r#"# Hooks for this project. Run `capt-hook test` to check them.

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

/// The `#:schema` line for the schema file at `schema`: a `file://` URL, which Taplo (and so
/// Even Better TOML) reads as it reads an `https://` one, wherever the hook file is.
pub fn schema_line(schema: &Path) -> String {
    let mut url = String::from("#:schema file://");
    for b in schema.as_os_str().as_encoded_bytes() {
        // Percent-encode all but a URL path's plain characters, so a space or a `#` in a home
        // directory's name does not end the URL.
        if b.is_ascii_alphanumeric() || b"/-._~".contains(b) {
            url.push(char::from(*b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// The scaffolded file's text: the `#:schema` line when the install's schema file is at
/// `schema`, then [`EXAMPLE`]. Without it the line is left out (a line naming a file that is
/// not there only earns an editor's error) and `None` says why.
pub fn example(schema: &Path) -> (String, Option<String>) {
    if schema.is_file() {
        (format!("{}\n{EXAMPLE}", schema_line(schema)), None)
    } else {
        (
            EXAMPLE.to_owned(),
            Some(format!(
                "no #:schema line: {} is not there (`cargo xtask install` and install.sh write it; \
                 `capt-hook schema` prints it)",
                schema.display()
            )),
        )
    }
}

/// Writes `<root>/.claude/hooks/example.toml` unless it exists.
pub fn init(root: &Path) -> anyhow::Result<ExitCode> {
    let (text, note) = example(&capt_hook_proto::paths::schema_path(
        &capt_hook_proto::paths::home(),
    ));
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
            f.write_all(text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            println!("Created {}", path.display());
            if let Some(note) = note {
                eprintln!("note: {note}");
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_line_is_a_file_url_with_odd_characters_escaped() {
        assert_eq!(
            schema_line(Path::new("/home/a b/#x/é/hooks.schema.json")),
            "#:schema file:///home/a%20b/%23x/%C3%A9/hooks.schema.json"
        );
        assert_eq!(
            schema_line(Path::new("/h/.local/share/captain-hook/hooks.schema.json")),
            "#:schema file:///h/.local/share/captain-hook/hooks.schema.json"
        );
    }
}
