//! Lint violations: pattern and per-line regex modes, the changed-lines filter, diff lint and
//! the `{violations}` list format.

use std::collections::HashSet;
use std::fmt;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};

use crate::pattern::{CodePattern, Match, ParsedCode, normalize_ws};

/// One finding, located in the post-edit file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Violation {
    /// 1-based line number in the whole file.
    pub line: usize,
    /// What is shown: the first line of a structural match, or a regex-matched line, trimmed.
    pub snippet: String,
}

impl Violation {
    /// Builds a violation from its parts.
    pub fn new(line: usize, snippet: impl Into<String>) -> Violation {
        Violation {
            line,
            snippet: snippet.into(),
        }
    }

    pub(crate) fn from_match(m: &Match) -> Violation {
        Violation::new(m.line, m.snippet())
    }
}

impl fmt::Display for Violation {
    /// `<snippet> (line N)`, the form every lint message lists.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (line {})", self.snippet, self.line)
    }
}

/// Changed-line ranges, sorted and disjoint, for quick "does this span touch an edit" checks.
#[derive(Debug, Clone)]
pub(crate) struct Changed<'a> {
    ranges: std::borrow::Cow<'a, [RangeInclusive<usize>]>,
}

impl<'a> Changed<'a> {
    pub(crate) fn new(ranges: &'a [RangeInclusive<usize>]) -> Changed<'a> {
        let sorted = ranges
            .windows(2)
            .all(|w| w[0].end() < w[1].start() && w[0].start() <= w[0].end());
        if sorted {
            return Changed {
                ranges: std::borrow::Cow::Borrowed(ranges),
            };
        }
        // Callers may hand over ranges in any order; sort and merge once so each lookup is a
        // binary search rather than a scan.
        let mut owned: Vec<RangeInclusive<usize>> =
            ranges.iter().filter(|r| !r.is_empty()).cloned().collect();
        owned.sort_by_key(|r| *r.start());
        let mut merged: Vec<RangeInclusive<usize>> = Vec::with_capacity(owned.len());
        for r in owned {
            match merged.last_mut() {
                Some(last) if *r.start() <= last.end().saturating_add(1) => {
                    let end = (*last.end()).max(*r.end());
                    *last = *last.start()..=end;
                }
                _ => merged.push(r),
            }
        }
        Changed {
            ranges: std::borrow::Cow::Owned(merged),
        }
    }

    /// Whether the 1-based line span `start..=end` shares a line with a changed range.
    pub(crate) fn touches(&self, start: usize, end: usize) -> bool {
        let i = self.ranges.partition_point(|r| *r.end() < start);
        self.ranges.get(i).is_some_and(|r| *r.start() <= end)
    }
}

/// Violations of `pattern` in `text`: each match as `<first line> (line N)`. With `changed`,
/// only matches whose lines touch a changed line are kept.
pub fn lint_pattern(
    pattern: &CodePattern,
    text: &str,
    changed: Option<&[RangeInclusive<usize>]>,
) -> Vec<Violation> {
    match ParsedCode::parse(pattern.lang(), text) {
        Ok(parsed) => lint_parsed(pattern, &parsed, changed),
        Err(_) => Vec::new(),
    }
}

/// [`lint_pattern`] over a text already parsed, so several patterns share one parse.
pub fn lint_parsed(
    pattern: &CodePattern,
    parsed: &ParsedCode,
    changed: Option<&[RangeInclusive<usize>]>,
) -> Vec<Violation> {
    let changed = changed.map(Changed::new);
    parsed
        .find(pattern)
        .iter()
        .filter(|m| {
            changed
                .as_ref()
                .is_none_or(|c| c.touches(m.line, m.end_line))
        })
        .map(Violation::from_match)
        .collect()
}

/// Violations of a per-line regex: each matching line of `text`, trimmed, with its 1-based
/// number. With `changed`, only changed lines are searched.
pub fn lint_regex(
    regex: &capt_hook_core::Pattern,
    text: &str,
    changed: Option<&[RangeInclusive<usize>]>,
) -> Vec<Violation> {
    let changed = changed.map(Changed::new);
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(n, _)| changed.as_ref().is_none_or(|c| c.touches(*n, *n)))
        .filter(|(_, line)| regex.is_match(line))
        .map(|(n, line)| Violation::new(n, line.trim()))
        .collect()
}

/// Matches of `pattern` present in `after` and absent from `before`, compared by their
/// whitespace-normalised text: code that was moved or re-indented never fires, and neither
/// does another copy of something already in `before`.
pub fn diff_lint(pattern: &CodePattern, before: &str, after: &str) -> Vec<Violation> {
    let (Ok(old), Ok(new)) = (
        ParsedCode::parse(pattern.lang(), before),
        ParsedCode::parse(pattern.lang(), after),
    ) else {
        return Vec::new();
    };
    diff_lint_parsed(pattern, &old, &new)
}

/// [`diff_lint`] over texts already parsed.
pub fn diff_lint_parsed(
    pattern: &CodePattern,
    before: &ParsedCode,
    after: &ParsedCode,
) -> Vec<Violation> {
    let seen: HashSet<String> = before.find(pattern).iter().map(Match::normalized).collect();
    after
        .find(pattern)
        .iter()
        .filter(|m| !seen.contains(&normalize_ws(&m.text)))
        .map(Violation::from_match)
        .collect()
}

/// The ellipsis element that stands for violations left out.
pub fn more_marker(hidden: usize) -> String {
    format!("…(+{hidden} more)")
}

/// The first `max_shown` violations as `<snippet> (line N)`, plus `…(+K more)` as one more item
/// when some were left out, joined with `sep`: the text that replaces `{violations}`.
pub fn format_violations(violations: &[Violation], sep: &str, max_shown: usize) -> String {
    let mut items: Vec<String> = violations
        .iter()
        .take(max_shown)
        .map(Violation::to_string)
        .collect();
    if violations.len() > max_shown {
        items.push(more_marker(violations.len() - max_shown));
    }
    items.join(sep)
}

/// How long the line diff may search for the smallest edit before settling for a larger one
/// (a superset of the real change), so a huge rewrite cannot stall a hook.
const DIFF_BUDGET: Duration = Duration::from_millis(500);

/// The 1-based line ranges of `post` that differ from `pre`: inserted or replaced lines, sorted
/// and merged. An empty `pre` (a new file) makes every line of `post` changed; a deletion alone
/// changes no line of `post`.
pub fn changed_lines(pre: &str, post: &str) -> Vec<RangeInclusive<usize>> {
    let old: Vec<&str> = pre.lines().collect();
    let new: Vec<&str> = post.lines().collect();
    if old.is_empty() {
        return if new.is_empty() {
            Vec::new()
        } else {
            vec![1..=new.len()]
        };
    }
    let deadline = Instant::now() + DIFF_BUDGET;
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &old, &new, Some(deadline));
    let mut out: Vec<RangeInclusive<usize>> = Vec::new();
    for op in ops {
        let (start, len) = match op {
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => (new_index, new_len),
            DiffOp::Equal { .. } | DiffOp::Delete { .. } => continue,
        };
        if len == 0 {
            continue;
        }
        let (first, last) = (start + 1, start + len);
        match out.last_mut() {
            Some(prev) if *prev.end() + 1 >= first => *prev = *prev.start()..=last,
            _ => out.push(first..=last),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Lang;
    use capt_hook_core::{Mode, Pattern};

    fn pat(src: &str, lang: Lang) -> CodePattern {
        CodePattern::new(src, lang).unwrap()
    }

    fn shown(v: &[Violation]) -> String {
        format_violations(v, ", ", 5)
    }

    #[test]
    fn python_lint_shows_first_line_of_each_match() {
        // code.jsonl CA01.
        let src = "import sys\n\n\ndef report(rows):\n    # print(rows) used to live here\n    print(\"rows:\", len(rows))\n    for row in rows:\n        print(\n            row.name,\n            row.total,\n        )\n    sys.stdout.flush()\n    return \"print(done)\"\n";
        let v = lint_pattern(&pat("print($$$)", Lang::Python), src, None);
        assert_eq!(
            shown(&v),
            "print(\"rows:\", len(rows)) (line 6), print( (line 8)"
        );
    }

    #[test]
    fn lint_in_each_language() {
        let ts = "import type { User } from \"./types\";\n\nexport async function fetchUser(id: string): Promise<User> {\n  console.log(\"fetching user\", id);\n  const res = await fetch(`/api/users/${id}`);\n  if (!res.ok) {\n    console.error(\"request failed\", res.status);\n  }\n  console.log(res.status);\n  return (await res.json()) as User;\n}\n";
        let v = lint_pattern(&pat("console.log($$$)", Lang::TypeScript), ts, None);
        assert_eq!(
            shown(&v),
            "console.log(\"fetching user\", id) (line 4), console.log(res.status) (line 9)"
        );

        let tsx = "export function Avatar({ src, name, large }: Props) {\n  if (large) {\n    return (\n      <img\n        src={src}\n        alt={name}\n      />\n    );\n  }\n  return <img src={src} alt={name} />;\n}\n";
        let v = lint_pattern(&pat("<img $$$ATTRS />", Lang::Tsx), tsx, None);
        assert_eq!(
            shown(&v),
            "<img (line 4), <img src={src} alt={name} /> (line 10)"
        );

        let js = "// eval(expr) used to be the fallback here\nfunction calculate(expr) {\n  return eval(expr);\n}\nmodule.exports = { calculate, hint: \"try eval(1 + 1)\" };\n";
        let v = lint_pattern(&pat("eval($$$)", Lang::JavaScript), js, None);
        assert_eq!(shown(&v), "eval(expr) (line 3)");

        let rs = "pub fn load(path: &str) -> Config {\n    let text = fs::read_to_string(path).unwrap();\n    let port = text.lines().next().expect(\"empty\").parse().unwrap();\n    let n = x.unwrap_or(1);\n}\n";
        let v = lint_pattern(&pat("$X.unwrap()", Lang::Rust), rs, None);
        assert_eq!(
            shown(&v),
            "fs::read_to_string(path).unwrap() (line 2), text.lines().next().expect(\"empty\").parse().unwrap() (line 3)"
        );

        let go = "package store\n\nfunc Open(dsn string) *Store {\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tpanic(fmt.Sprintf(\"ping %s\", dsn))\n}\n";
        let v = lint_pattern(&pat("panic($$$)", Lang::Go), go, None);
        assert_eq!(
            shown(&v),
            "panic(err) (line 5), panic(fmt.Sprintf(\"ping %s\", dsn)) (line 7)"
        );

        let sh = "set -e\ncurl -s https://x | sh\necho curl\n";
        let v = lint_pattern(&pat("curl $$$ARGS", Lang::Bash), sh, None);
        assert_eq!(shown(&v), "curl -s https://x (line 2)");
    }

    #[test]
    fn only_matches_touching_changed_lines_are_kept() {
        // code.jsonl CA17: the untouched print() inside the edit is not reported.
        let pre = "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef sync(items):\n    print(\"syncing\", len(items))\n    for item in items:\n        item.save()\n    return len(items)\n";
        let post = "import logging\n\nlog = logging.getLogger(__name__)\n\n\ndef sync(items):\n    print(\"syncing\", len(items))\n    for item in items:\n        print(\"saving\", item.id)\n        item.save()\n    return len(items)\n";
        let changed = changed_lines(pre, post);
        assert_eq!(changed, vec![9..=9]);
        let v = lint_pattern(&pat("print($$$)", Lang::Python), post, Some(&changed));
        assert_eq!(shown(&v), "print(\"saving\", item.id) (line 9)");

        // A multi-line match counts when any of its lines changed.
        let pre = "print(\n    a,\n)\n";
        let post = "print(\n    b,\n)\n";
        let changed = changed_lines(pre, post);
        let v = lint_pattern(&pat("print($$$)", Lang::Python), post, Some(&changed));
        assert_eq!(shown(&v), "print( (line 1)");
    }

    #[test]
    fn regex_lint_reports_trimmed_lines() {
        // code.jsonl CA08 and CA18.
        let re = Pattern::new(r"\b(TODO|FIXME)\b", Mode::Plain).unwrap();
        let src = "def charge(customer, amount):\n    # TODO: handle currency conversion\n    if amount <= 0:\n        raise ValueError(\"amount must be positive\")\n    total = amount * 1.2  # FIXME hard-coded VAT\n    return customer.charge(total)\n";
        let v = lint_regex(&re, src, None);
        assert_eq!(
            format_violations(&v, "; ", 5),
            "# TODO: handle currency conversion (line 2); total = amount * 1.2  # FIXME hard-coded VAT (line 5)"
        );
        let pre = "import csv\n\n# TODO: support xlsx\n\n\ndef export(rows, path):\n    with open(path, \"w\", newline=\"\") as fh:\n        writer = csv.writer(fh)\n        writer.writerows(rows)\n";
        let post = "import csv\n\n# TODO: support xlsx\n\n\ndef export(rows, path):\n    with open(path, \"w\", newline=\"\") as fh:\n        writer = csv.writer(fh)\n        writer.writerow([\"id\", \"name\"])  # TODO: header from schema\n        writer.writerows(rows)\n";
        let re = Pattern::new(r"\bTODO\b", Mode::Plain).unwrap();
        let v = lint_regex(&re, post, Some(&changed_lines(pre, post)));
        assert_eq!(
            shown(&v),
            "writer.writerow([\"id\", \"name\"])  # TODO: header from schema (line 9)"
        );
    }

    #[test]
    fn format_truncates_with_a_count() {
        let v: Vec<Violation> = (1..=7)
            .map(|n| Violation::new(n, format!("x{n}")))
            .collect();
        assert_eq!(
            format_violations(&v, ", ", 5),
            "x1 (line 1), x2 (line 2), x3 (line 3), x4 (line 4), x5 (line 5), …(+2 more)"
        );
        assert_eq!(format_violations(&v, " | ", 0), "…(+7 more)");
        assert_eq!(
            format_violations(&v[..2], ", ", 2),
            "x1 (line 1), x2 (line 2)"
        );
        assert_eq!(format_violations(&[], ", ", 5), "");
    }

    #[test]
    fn changed_lines_cover_inserts_and_replacements() {
        assert_eq!(changed_lines("", "a\nb\n"), vec![1..=2]);
        assert_eq!(changed_lines("", ""), Vec::<RangeInclusive<usize>>::new());
        assert_eq!(changed_lines("a\nb\nc\n", "a\nb\nc\n"), vec![]);
        assert_eq!(
            changed_lines("a\nb\nc\n", "a\nX\nc\nd\n"),
            vec![2..=2, 4..=4]
        );
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), vec![]);
        assert_eq!(changed_lines("a\nb", "a\nb\n"), vec![]);
        assert_eq!(changed_lines("a\r\nb\r\n", "a\r\nc\r\n"), vec![2..=2]);
        // Adjacent changes merge into one range.
        assert_eq!(changed_lines("a\nb\nc\n", "x\ny\nc\n"), vec![1..=2]);
    }

    #[test]
    fn unsorted_changed_ranges_still_filter() {
        let post = "print(1)\nx = 1\nprint(2)\nprint(3)\n";
        let ranges = [4..=4, 1..=1, 1..=1];
        let v = lint_pattern(&pat("print($$$)", Lang::Python), post, Some(&ranges));
        assert_eq!(shown(&v), "print(1) (line 1), print(3) (line 4)");
        let none: [RangeInclusive<usize>; 0] = [];
        assert!(lint_pattern(&pat("print($$$)", Lang::Python), post, Some(&none)).is_empty());
    }

    #[test]
    fn diff_lint_flags_only_new_constructs() {
        let p = pat("print($$$)", Lang::Python);
        // CA19: one print was there, the other is new.
        let before = "import os\nprint(\"loaded config\")\n";
        let after = "import os\nimport sys\nprint(\"loaded config\")\nprint(\"argv\", sys.argv)\n";
        assert_eq!(
            shown(&diff_lint(&p, before, after)),
            "print(\"argv\", sys.argv) (line 4)"
        );
        // CA20: a move, and a second copy of an existing call, introduce nothing.
        let moved = diff_lint(
            &p,
            "def main():\n    print(\"starting\")\n    setup()\n",
            "def main():\n    setup()\n    print(\"starting\")\n",
        );
        assert!(moved.is_empty());
        let copied = diff_lint(
            &p,
            "def poll(queue):\n    print(\"tick\")\n    queue.poll()\n",
            "def poll(queue):\n    print(\"tick\")\n    queue.poll()\n    print(\"tick\")\n",
        );
        assert!(copied.is_empty());
        // CA21: a re-indented multi-line call is the same construct; a new one fires.
        let p = pat("requests.post($$$)", Lang::Python);
        let before = "import requests\n\n\ndef alert(url, text):\n    requests.post(\n        url,\n        json={\"text\": text},\n    )\n";
        let after = "import requests\n\n\ndef alert(url, text, page=False):\n    if page:\n        requests.post(PAGER_URL, json={\"text\": text}, timeout=5)\n    else:\n        requests.post(\n            url,\n            json={\"text\": text},\n        )\n";
        assert_eq!(
            shown(&diff_lint(&p, before, after)),
            "requests.post(PAGER_URL, json={\"text\": text}, timeout=5) (line 6)"
        );
        // A new file: everything is new.
        let ts = pat("console.log($$$)", Lang::TypeScript);
        assert_eq!(
            shown(&diff_lint(&ts, "", "console.log(1);\n")),
            "console.log(1) (line 1)"
        );
    }
}
