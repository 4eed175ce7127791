//! The session guard prefilter: decides whether a PreToolUse or PermissionRequest is
//! *mandatory*, i.e. might run a program that can end sessions (kill, pkill, shutdown, …) and so
//! must never pass unchecked. It never decides a verdict; it only raises the stakes of a failure.
//!
//! The rule is deliberately broad (a mention anywhere in the tool input counts) with one
//! exemption: a Bash line whose every command starts with a known read-only or first-party
//! program, with no substitutions that could hide another command.

use capt_hook_proto::serde_json::Value;

/// Tools that are mandatory by name alone.
const TOOLS: &[&str] = &["TaskStop"];
/// Programs that can end or escape a session (matched as whole words, case-insensitively).
const GUARDED: &[&str] = &[
    "kill",
    "pkill",
    "killall",
    "killall5",
    "fuser",
    "skill",
    "snice",
    "kill-port",
    "orca",
    "launchctl",
    "osascript",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "renice",
    "tmux",
    "softwareupdate",
    "pmset",
    "caffeinate",
    "setsid",
    "builtin",
    "noglob",
    "stdbuf",
    "unbuffer",
    "script",
    "watch",
    "parallel",
    "chrt",
    "ionice",
    "taskset",
    "arch",
    "su",
    "chroot",
    "find",
];
/// Command heads that make a Bash segment harmless whatever its arguments say.
const EXEMPT_HEADS: &[&str] = &[
    "cc-slack",
    "ccn",
    "cc-notes",
    "cc-present",
    "cc-transcript",
    "cat",
    "echo",
    "grep",
    "head",
    "jq",
    "tail",
    "wc",
];

/// True when `event` with this payload must not pass unchecked.
pub fn mandatory(event: &str, payload: &Value) -> bool {
    if !capt_hook_proto::failure::is_guarded(event) {
        return false;
    }
    let Value::Object(obj) = payload else {
        return false;
    };
    let tool = obj.get("tool_name");
    let tool_name = tool.and_then(Value::as_str);
    if tool_name.is_some_and(|t| TOOLS.contains(&t)) {
        return true;
    }
    let input = obj.get("tool_input");
    if tool_name == Some("Bash")
        && let Some(command) = input.and_then(|i| i.get("command")).and_then(Value::as_str)
        && first_party(command)
    {
        return false;
    }
    tool.is_some_and(mentions_guarded) || input.is_some_and(mentions_guarded)
}

/// Whether a JSON value names a guarded program: strings directly, arrays of strings also as
/// one space-joined line (an argv), objects through their values.
fn mentions_guarded(v: &Value) -> bool {
    match v {
        Value::String(s) => names_guarded(s),
        Value::Array(items) => {
            let joined: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            joined.is_some_and(|parts| names_guarded(&parts.join(" ")))
                || items.iter().any(mentions_guarded)
        }
        Value::Object(map) => map.values().any(mentions_guarded),
        _ => false,
    }
}

/// Whether text names a guarded program, after removing quoting that hides a word from a naive
/// search (`p\kill`, `'orca'`, `[k]ill`) and folding look-alike letters to ASCII.
pub fn names_guarded(text: &str) -> bool {
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '\\' | '\'' | '"' | '[' | ']'))
        .map(|c| match c {
            '\u{130}' | '\u{131}' => 'i',
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    let bytes = cleaned.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    GUARDED.iter().any(|word| {
        let w = word.as_bytes();
        let mut from = 0;
        while let Some(pos) = find(&bytes[from..], w) {
            let start = from + pos;
            let end = start + w.len();
            let before = start == 0 || !is_word(bytes[start - 1]);
            let after = end == bytes.len() || !is_word(bytes[end]);
            if before && after {
                return true;
            }
            from = start + 1;
        }
        false
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A Bash line is first-party when it hides no command in a substitution and every segment's
/// first real word (after `NAME=value` assignments) is a plain literal naming an exempt program.
fn first_party(command: &str) -> bool {
    let command = command.replace("\\\n", "");
    if ["$(", "`", "<(", ">("].iter().any(|s| command.contains(s)) {
        return false;
    }
    let Some(segments) = segments(&command) else {
        return false;
    };
    segments.iter().all(|words| {
        let mut words = words.iter().skip_while(|w| is_assignment(w));
        match words.next() {
            None => true,
            Some(head) => {
                head.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./~+-".contains(c))
                    && EXEMPT_HEADS.contains(&head.rsplit('/').next().unwrap_or(head))
            }
        }
    })
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Splits a command line into segments of raw words (quotes kept), breaking on `;`, newline,
/// `|`, `(`, `)` and `&` (except the `&` of a redirection such as `2>&1` or `&>`). `None` for an
/// unterminated quote: the line cannot be read, so it is not exempt.
fn segments(line: &str) -> Option<Vec<Vec<String>>> {
    let chars: Vec<char> = line.chars().collect();
    let mut segments = vec![Vec::new()];
    let mut word = String::new();
    let mut i = 0;
    let end_word = |word: &mut String, segments: &mut Vec<Vec<String>>| {
        if !word.is_empty()
            && let Some(seg) = segments.last_mut()
        {
            seg.push(std::mem::take(word));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' => {
                let close = chars[i + 1..].iter().position(|&c| c == '\'')? + i + 1;
                word.extend(&chars[i..=close]);
                i = close;
            }
            '"' => {
                word.push(c);
                i += 1;
                loop {
                    let d = *chars.get(i)?;
                    word.push(d);
                    if d == '\\' && matches!(chars.get(i + 1), Some('$' | '`' | '"' | '\\' | '\n'))
                    {
                        word.push(chars[i + 1]);
                        i += 1;
                    } else if d == '"' {
                        break;
                    }
                    i += 1;
                }
            }
            '\\' => {
                word.push(c);
                if let Some(&n) = chars.get(i + 1) {
                    word.push(n);
                    i += 1;
                }
            }
            ';' | '\n' | '|' | '(' | ')' => {
                end_word(&mut word, &mut segments);
                segments.push(Vec::new());
            }
            '&' if !(i > 0 && matches!(chars[i - 1], '<' | '>'))
                && chars.get(i + 1) != Some(&'>') =>
            {
                end_word(&mut word, &mut segments);
                segments.push(Vec::new());
            }
            c if c.is_whitespace() => end_word(&mut word, &mut segments),
            c => word.push(c),
        }
        i += 1;
    }
    end_word(&mut word, &mut segments);
    Some(segments)
}

#[cfg(test)]
mod tests {
    /// The plugin's no-client script carries the same lists (it runs where this binary is
    /// missing); this keeps them one fact.
    #[test]
    fn the_no_client_script_agrees() {
        let script = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin/scripts/no_client.py"),
        )
        .unwrap();
        let words = |name: &str| -> Vec<String> {
            let start = script
                .find(&format!("\n{name} = ("))
                .unwrap_or_else(|| panic!("{name}"));
            let body = &script[start..];
            let body = &body[body.find('(').unwrap() + 1
                ..body.find("\n)").map_or_else(
                    || body.find(")\n").unwrap(),
                    |e| e.min(body.find(")\n").unwrap_or(e)),
                )];
            body.split(|c: char| c == '"' || c == ',' || c.is_whitespace())
                .filter(|w| !w.is_empty() && *w != "split" && !w.starts_with('.'))
                .map(str::to_owned)
                .collect()
        };
        let own = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(words("GUARDED"), own(GUARDED));
        assert_eq!(words("EXEMPT_HEADS"), own(EXEMPT_HEADS));
        assert_eq!(words("TOOLS"), own(TOOLS));
    }

    use super::*;
    use capt_hook_proto::serde_json::json;

    fn bash(cmd: &str) -> bool {
        mandatory(
            "PreToolUse",
            &json!({"tool_name": "Bash", "tool_input": {"command": cmd}}),
        )
    }

    #[test]
    fn session_ending_programs_are_mandatory() {
        for cmd in [
            "pkill -x sleep; orca terminal close",
            "p\\kill node",
            "'orca' terminal close",
            "[k]ill 14575",
            "Killall Orca",
            "sudo reboot",
            "kill -0 1",
            "cat x; p\\kill y",
            "true && kill 1",
            "echo a\nkill 1",
            "ls | xargs kill",
            "echo \"$(kill 1)\"",
            "echo `kill 1`",
            "cat <(pkill node)",
            "(kill 1)",
            "{ kill 1; }",
            "ccn x & pkill y",
            "cc-slack x 2>&1&kill 1",
            "echo \">\"&kill 1",
            "kill&>/tmp/echo 1",
            "2>/dev/null cat kill.log",
            "echo \"a\\\\\"; kill 1",
            "echo 'unterminated kill",
            "\u{212a}ill 1",
            "\u{17f}hutdown now",
        ] {
            assert!(bash(cmd), "{cmd:?} should be mandatory");
        }
    }

    #[test]
    fn first_party_and_harmless_lines_are_not() {
        for cmd in [
            "AWS_PROFILE=x /opt/bin/cc-slack reply --no-watch 2>&1 | tail -2",
            "cc-slack grant x 'watch this' | tail -1",
            "ccn task list --watch",
            "echo pkill -f never",
            "echo \"a \\\"; kill 1\\\"\"",
            "cc-notes add \\\n --watch",
            "git status",
            "skillet --search killer_feature",
            "pgrep -f claude",
        ] {
            assert!(!bash(cmd), "{cmd:?} should not be mandatory");
        }
    }

    #[test]
    fn other_shapes() {
        assert!(mandatory(
            "PreToolUse",
            &json!({"tool_name": "TaskStop", "tool_input": {}})
        ));
        assert!(mandatory(
            "PermissionRequest",
            &json!({"tool_name": "mcp__x", "tool_input": {"opts": {"cmd": "orca terminal close"}}})
        ));
        assert!(mandatory(
            "PreToolUse",
            &json!({"tool_name": "X", "tool_input": {"argv": ["pkill", "-x"]}})
        ));
        assert!(mandatory(
            "PreToolUse",
            &json!({"tool_name": "Monitor", "tool_input": {"command": "cat x; pkill y"}})
        ));
        assert!(!mandatory(
            "PreToolUse",
            &json!({"tool_name": "X", "tool_input": {"argv": ["pk", "ill"]}})
        ));
        assert!(!mandatory(
            "PreToolUse",
            &json!({"tool_name": "X", "tool_input": {"kill": 1}})
        ));
        assert!(!mandatory(
            "PostToolUse",
            &json!({"tool_name": "Bash", "tool_input": {"command": "pkill x"}})
        ));
        assert!(!mandatory(
            "PreToolUse",
            &json!({"tool_name": "Bash", "transcript_path": "/killall"})
        ));
        assert!(!mandatory("PreToolUse", &json!([1, 2])));
        assert!(!mandatory(
            "PreToolUse",
            &json!({"tool_name": "Edit", "tool_input": {"file_path": "a.rs"}})
        ));
    }
}
