//! Codex's `apply_patch` text, read into the file operations it performs, so rules written for
//! Edit and Write (`file_path`, `old_string`/`new_string`, `content`) see what a patch touches.
//!
//! The format: `*** Begin Patch`, then per file one of `*** Add File: <path>` (every line `+`),
//! `*** Delete File: <path>`, or `*** Update File: <path>` (optionally `*** Move to: <path>`)
//! followed by chunks, each opened by a line starting `@@` and made of lines starting with a
//! space (context), `-` (removed) or `+` (added); `*** End of File` may close a chunk; then
//! `*** End Patch`.

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    /// A new file with this text.
    Add {
        /// The file, as the patch names it.
        path: String,
        /// Its whole text.
        content: String,
    },
    /// A file removed.
    Delete {
        /// The file, as the patch names it.
        path: String,
    },
    /// A file changed in place (and perhaps renamed).
    Update {
        /// The file, as the patch names it.
        path: String,
        /// Its new name, when the patch moves it.
        move_to: Option<String>,
        /// The replacements, in order.
        chunks: Vec<Chunk>,
    },
}

/// One replacement: the lines a chunk expects (context and removed) and the lines it leaves
/// (context and added), each joined with newlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The text before.
    pub old: String,
    /// The text after.
    pub new: String,
}

/// Why a patch could not be read; `line` counts from 1 within the patch text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("apply_patch line {line}: {message}")]
pub struct PatchError {
    /// The line that could not be read.
    pub line: usize,
    /// What was wrong with it.
    pub message: String,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// Reads a patch. Text before `*** Begin Patch` (a shell heredoc's first line) is skipped; text
/// after `*** End Patch` is ignored.
pub fn parse(text: &str) -> Result<Vec<PatchOp>, PatchError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(begin) = lines.iter().position(|l| l.trim() == BEGIN) else {
        return Err(PatchError {
            line: 1,
            message: format!("no `{BEGIN}` line"),
        });
    };
    let mut ops: Vec<PatchOp> = Vec::new();
    let mut i = begin + 1;
    while i < lines.len() {
        let line = lines[i];
        let at = i + 1;
        i += 1;
        if line.trim() == END {
            return Ok(ops);
        }
        if let Some(path) = line.strip_prefix(ADD) {
            let mut content = String::new();
            while i < lines.len() && !lines[i].starts_with("*** ") {
                match lines[i].strip_prefix('+') {
                    Some(l) => {
                        content.push_str(l);
                        content.push('\n');
                    }
                    None => {
                        return Err(PatchError {
                            line: i + 1,
                            message: "a line of an added file must start with `+`".into(),
                        });
                    }
                }
                i += 1;
            }
            ops.push(PatchOp::Add {
                path: file(path, at)?,
                content,
            });
        } else if let Some(path) = line.strip_prefix(DELETE) {
            ops.push(PatchOp::Delete {
                path: file(path, at)?,
            });
        } else if let Some(path) = line.strip_prefix(UPDATE) {
            let path = file(path, at)?;
            let mut move_to = None;
            if let Some(to) = lines.get(i).and_then(|l| l.strip_prefix(MOVE)) {
                move_to = Some(file(to, i + 1)?);
                i += 1;
            }
            let (chunks, next) = chunks(&lines, i)?;
            i = next;
            ops.push(PatchOp::Update {
                path,
                move_to,
                chunks,
            });
        } else if line.trim().is_empty() {
            continue;
        } else {
            return Err(PatchError {
                line: at,
                message: format!("expected a file header (`{ADD}`, `{DELETE}`, `{UPDATE}`)"),
            });
        }
    }
    Err(PatchError {
        line: lines.len(),
        message: format!("no `{END}` line"),
    })
}

/// A shell command line that is Codex's `apply_patch` run with the patch in a heredoc
/// (`apply_patch <<'EOF'` … `EOF`, `applypatch` too, perhaps after `cd <dir> &&`): Codex does
/// not run such a line, it applies the patch itself. The directory the paths are relative to
/// (the `cd`'s, if any) and the text holding the patch; `None` for any other command line.
pub fn shell_invocation(command: &str) -> Option<(Option<&str>, &str)> {
    let mut rest = command.trim_start();
    let mut dir = None;
    if let Some(after) = rest.strip_prefix("cd ") {
        let (d, tail) = after.trim_start().split_once("&&")?;
        let d = d.trim();
        // One word, as Codex reads it; quotes around it are the shell's, not the path's.
        if d.is_empty() || d.contains(char::is_whitespace) && !is_quoted(d) {
            return None;
        }
        dir = Some(d.trim_matches(|c| c == '\'' || c == '"'));
        rest = tail.trim_start();
    }
    let tail = ["apply_patch", "applypatch"]
        .iter()
        .find_map(|name| rest.strip_prefix(name))?;
    tail.trim_start_matches([' ', '\t'])
        .starts_with("<<")
        .then_some((dir, tail))
}

fn is_quoted(word: &str) -> bool {
    word.len() >= 2
        && (word.starts_with('\'') && word.ends_with('\'')
            || word.starts_with('"') && word.ends_with('"'))
}

fn file(path: &str, line: usize) -> Result<String, PatchError> {
    let path = path.trim();
    if path.is_empty() {
        return Err(PatchError {
            line,
            message: "the file header names no file".into(),
        });
    }
    Ok(path.to_owned())
}

/// The chunks of an Update from line index `i`, and the index of the first line after them.
fn chunks(lines: &[&str], mut i: usize) -> Result<(Vec<Chunk>, usize), PatchError> {
    let mut out = Vec::new();
    let mut old: Vec<&str> = Vec::new();
    let mut new: Vec<&str> = Vec::new();
    let flush = |old: &mut Vec<&str>, new: &mut Vec<&str>, out: &mut Vec<Chunk>| {
        if !old.is_empty() || !new.is_empty() {
            out.push(Chunk {
                old: old.join("\n"),
                new: new.join("\n"),
            });
        }
        old.clear();
        new.clear();
    };
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("@@") {
            flush(&mut old, &mut new, &mut out);
        } else if line == END_OF_FILE {
            // Closes the chunk; what follows is another header or the end.
        } else if line.starts_with("*** ") {
            break;
        } else if let Some(l) = line.strip_prefix('-') {
            old.push(l);
        } else if let Some(l) = line.strip_prefix('+') {
            new.push(l);
        } else if let Some(l) = line.strip_prefix(' ') {
            old.push(l);
            new.push(l);
        } else if line.is_empty() {
            // An empty context line whose leading space an editor trimmed.
            old.push("");
            new.push("");
        } else {
            return Err(PatchError {
                line: i + 1,
                message: "a chunk line must start with ` `, `-`, `+` or `@@`".into(),
            });
        }
        i += 1;
    }
    flush(&mut old, &mut new, &mut out);
    if out.is_empty() {
        return Err(PatchError {
            line: i,
            message: "an updated file has no changes".into(),
        });
    }
    Ok((out, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codex's shell form of `apply_patch` is recognised with or without a `cd`; a command
    /// that merely mentions it is not.
    #[test]
    fn recognises_the_shell_form() {
        let heredoc = "apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n";
        let (dir, text) = shell_invocation(heredoc).unwrap();
        assert_eq!(dir, None);
        assert!(text.contains("*** Begin Patch"));
        let cd = format!("cd 'src/lib' && {heredoc}");
        assert_eq!(shell_invocation(&cd).unwrap().0, Some("src/lib"));
        assert!(shell_invocation("applypatch <<EOF\n*** Begin Patch\n").is_some());
        for other in [
            "grep apply_patch notes.txt",
            "apply_patch_helper <<'EOF'\n",
            "echo hi && apply_patch <<'EOF'\n",
            "cd a b && apply_patch <<'EOF'\n",
            "apply_patch < patch.txt",
        ] {
            assert_eq!(shell_invocation(other), None, "{other}");
        }
    }

    #[test]
    fn reads_every_kind_of_operation() {
        let text = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: new.py\n+x = 1\n+\n\
                    *** Update File: a.py\n*** Move to: b.py\n@@ def f():\n-    return 1\n\
                    +    return 2\n@@\n a\n-b\n+c\n*** End of File\n*** Delete File: old.txt\n\
                    *** End Patch\nEOF\n";
        let ops = parse(text).unwrap();
        assert_eq!(
            ops,
            vec![
                PatchOp::Add {
                    path: "new.py".into(),
                    content: "x = 1\n\n".into()
                },
                PatchOp::Update {
                    path: "a.py".into(),
                    move_to: Some("b.py".into()),
                    chunks: vec![
                        Chunk {
                            old: "    return 1".into(),
                            new: "    return 2".into()
                        },
                        Chunk {
                            old: "a\nb".into(),
                            new: "a\nc".into()
                        },
                    ],
                },
                PatchOp::Delete {
                    path: "old.txt".into()
                },
            ]
        );
    }

    #[test]
    fn bad_patches_say_which_line() {
        assert_eq!(parse("hello").unwrap_err().line, 1);
        let e = parse("*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch").unwrap_err();
        assert_eq!((e.line, e.to_string().contains("`+`")), (3, true));
        let e = parse("*** Begin Patch\n*** Update File: x\n*** End Patch").unwrap_err();
        assert!(e.message.contains("no changes"), "{e}");
        let e = parse("*** Begin Patch\n*** Delete File: x\n").unwrap_err();
        assert!(e.message.contains("End Patch"), "{e}");
        let e = parse("*** Begin Patch\ngarbage\n*** End Patch").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
