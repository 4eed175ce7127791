//! Evidence that is not in the event: the working tree's diff, and excerpts of an edited file.

use std::path::Path;
use std::time::Instant;

/// A compact diff of the working tree against `HEAD` (one line of context, no colour), cut to
/// `max_chars`. `None` when `root` is not in a git repository, git fails or the tree is clean:
/// a hook that needs the diff then has nothing to judge.
pub fn git_diff(root: &Path, deadline: Instant, max_chars: usize) -> Option<String> {
    let argv: Vec<String> = [
        "git",
        "-C",
        &root.display().to_string(),
        "--no-pager",
        "diff",
        "HEAD",
        "-U1",
        "--no-color",
        "--no-ext-diff",
    ]
    .map(String::from)
    .to_vec();
    let done = crate::process::run("git", &argv, "", None, &[], deadline, "").ok()?;
    if !done.status.success() || done.stdout.trim().is_empty() {
        return None;
    }
    Some(clip_lines(&done.stdout, max_chars))
}

/// `text` cut at a line boundary to at most `max_chars`, saying how much was left out.
fn clip_lines(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.trim_end().to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut lines = text.lines();
    for line in lines.by_ref() {
        let n = line.chars().count() + 1;
        if used + n > max_chars {
            break;
        }
        used += n;
        out.push_str(line);
        out.push('\n');
    }
    let rest = lines.count() + 1;
    out.push_str(&format!("… ({rest} more lines)"));
    out
}

/// The parts of `before` and `after` around where they differ, each at most `max_chars`:
/// what a judge needs of an edited file without the whole file.
pub fn edit_excerpts(before: &str, after: &str, max_chars: usize) -> (String, String) {
    let prefix = before
        .char_indices()
        .zip(after.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or(before.len().min(after.len()));
    // Start a little before the change, at a line start.
    let lead = max_chars / 4;
    let floor = |text: &str, mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start_in = |text: &str| -> usize {
        let at = floor(text, prefix.min(text.len()));
        let from = floor(text, at.saturating_sub(lead));
        // Begin at a line start when one lies between.
        match text[from..at].find('\n') {
            Some(i) if from > 0 => from + i + 1,
            _ => from,
        }
    };
    let take = |text: &str| -> String {
        let from = start_in(text);
        let mut out: String = text[from..].chars().take(max_chars).collect();
        if from > 0 {
            out.insert_str(0, "…\n");
        }
        if text[from..].chars().count() > max_chars {
            out.push_str("\n…");
        }
        out
    };
    (take(before), take(after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn the_diff_is_none_outside_a_repo_and_for_a_clean_tree() {
        let soon = || Instant::now() + Duration::from_secs(10);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(git_diff(dir.path(), soon(), 1000), None, "not a repo");
        git(dir.path(), &["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        git(dir.path(), &["add", "."]);
        git(dir.path(), &["commit", "-qm", "init"]);
        assert_eq!(git_diff(dir.path(), soon(), 1000), None, "clean");
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let d = git_diff(dir.path(), soon(), 1000).unwrap();
        assert!(d.contains("+two"), "{d}");
        let short = git_diff(dir.path(), soon(), 30).unwrap();
        assert!(short.contains("more lines"), "{short}");
    }

    #[test]
    fn excerpts_center_on_the_change() {
        let before = format!("{}old line\ntail\n", "filler\n".repeat(500));
        let after = format!("{}new line\ntail\n", "filler\n".repeat(500));
        let (b, a) = edit_excerpts(&before, &after, 200);
        assert!(b.contains("old line") && !b.contains("new line"), "{b}");
        assert!(a.contains("new line"), "{a}");
        assert!(a.starts_with("…\n") && a.chars().count() < 230, "{a}");
        let (b, a) = edit_excerpts("", "fresh file\n", 200);
        assert_eq!((b.as_str(), a.as_str()), ("", "fresh file\n"));
    }
}
