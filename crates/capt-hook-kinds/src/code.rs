//! Code-aware primitives on ast-grep: `lint`, `diff_lint`, `rewrite_code`, `styleguide`, the
//! structural form of `rewrite_command`, and the `pattern` condition.
//!
//! Lints read whole files: the post-edit file (on disk after PostToolUse, computed before it)
//! and the pre-edit file (the tool response's `originalFile`, or the edit undone), so a
//! violation's line number is the file's, and only lines the edit changed are reported.

use std::ops::RangeInclusive;
use std::sync::Arc;

use capt_hook_code::{
    AnyLangPattern, CommandRewrite, changed_lines, check_style, format_style_report,
    format_violations,
};
use capt_hook_core::condition::is_test_file;
use capt_hook_core::edit::EditImages;
use capt_hook_core::paths::is_project_path;
use capt_hook_core::{Condition, Event, EventKind, EventSet, HookResult, Pattern, ToolCall};
use serde_json::Value;

use capt_hook_engine::hook::{HandlerError, HandlerFn};
use capt_hook_engine::primitives::{CustomKind, DefError, HookDef, custom, rewrite_command_with};

pub use capt_hook_code::{
    Change, CodePattern, Lang, Matcher, MatcherError, ParsedCode, StyleCheck, StyleRule, Violation,
    matchers,
};
/// A node of a parsed file, as lint and style callbacks walk it (`ParsedCode::ts_root`).
pub use tree_sitter::Node;

/// A lint callback over the whole post-edit text (string mode): each returned string is one
/// violation, listed as given.
pub type TextCheck = Arc<dyn Fn(&str) -> Vec<String> + Send + Sync>;

/// A lint callback over the parsed post-edit file (tree mode): violations located by line, kept
/// when their line is one the edit changed.
pub type TreeCheck = Arc<dyn Fn(&ParsedCode) -> Vec<Violation> + Send + Sync>;

/// A diff-lint callback over the parsed pre- and post-edit files: the violations the edit
/// introduces, located in the post-edit file.
pub type TreeDiffCheck = Arc<dyn Fn(&ParsedCode, &ParsedCode) -> Vec<Violation> + Send + Sync>;

/// What a lint looks for.
#[derive(Clone)]
pub enum LintCheck {
    /// An ast-grep pattern; each match is one violation.
    Pattern(CodePattern),
    /// A regex; each matching line is one violation.
    Regex(Pattern),
    /// A Rust callback over the file's text (Rust SDK).
    Text(TextCheck),
    /// A Rust callback over the parsed file (Rust SDK).
    Tree(TreeCheck),
}

impl std::fmt::Debug for LintCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LintCheck::Pattern(p) => write!(f, "Pattern({:?})", p.as_str()),
            LintCheck::Regex(r) => write!(f, "Regex({:?})", r.as_str()),
            LintCheck::Text(_) => f.write_str("Text(<fn>)"),
            LintCheck::Tree(_) => f.write_str("Tree(<fn>)"),
        }
    }
}

impl LintCheck {
    /// String mode: `check` reads the post-edit text and returns violation strings.
    pub fn text<F>(check: F) -> LintCheck
    where
        F: Fn(&str) -> Vec<String> + Send + Sync + 'static,
    {
        LintCheck::Text(Arc::new(check))
    }

    /// Tree mode: `check` reads the parsed post-edit file (the lint's language) and returns
    /// violations by line; only those on lines the edit changed are reported.
    pub fn tree<F>(check: F) -> LintCheck
    where
        F: Fn(&ParsedCode) -> Vec<Violation> + Send + Sync + 'static,
    {
        LintCheck::Tree(Arc::new(check))
    }

    /// True for the callback modes, whose user code runs on the handler pool.
    fn is_callback(&self) -> bool {
        matches!(self, LintCheck::Text(_) | LintCheck::Tree(_))
    }
}

/// Whether 1-based `line` lies in one of the changed ranges (`None`: every line changed).
fn on_changed_line(changed: Option<&[RangeInclusive<usize>]>, line: usize) -> bool {
    changed.is_none_or(|ranges| ranges.iter().any(|r| r.contains(&line)))
}

/// `items` listed for `{violations}`: the first `max_shown`, then `…(+K more)`.
fn list_strings(items: &[String], sep: &str, max_shown: usize) -> String {
    let mut shown: Vec<String> = items.iter().take(max_shown).cloned().collect();
    if items.len() > max_shown {
        shown.push(capt_hook_code::more_marker(items.len() - max_shown));
    }
    shown.join(sep)
}

/// The options of a `lint` or `diff_lint` hook.
#[derive(Debug, Clone)]
pub struct LintOptions {
    /// The language (its extensions guard the hook).
    pub lang: Lang,
    /// The message; `{violations}` is replaced by the list.
    pub message: String,
    /// Between listed violations.
    pub sep: String,
    /// How many violations to list before `…(+K more)`.
    pub max_shown: usize,
    /// Only lint when the file contains this text.
    pub trigger: Option<String>,
    /// Deny instead of warning.
    pub block: bool,
}

impl LintOptions {
    /// Defaults: `, ` between items, five shown, warn.
    pub fn new(lang: Lang, message: impl Into<String>) -> LintOptions {
        LintOptions {
            lang,
            message: message.into(),
            sep: ", ".into(),
            max_shown: 5,
            trigger: None,
            block: false,
        }
    }
}

/// The lines the edit changed (`None`: a Write, where every line is new), diffed once per
/// event however many code hooks ask. The texts themselves are the event's edit images.
fn changed(evt: &Event) -> Arc<Option<Vec<RangeInclusive<usize>>>> {
    evt.memo("code.changed", || {
        let images = evt.edit_images()?;
        (!matches!(evt.tool(), ToolCall::Write { .. }))
            .then(|| changed_lines(&images.pre, &images.post))
    })
}

/// The post-edit file parsed as `lang`, once per event and language.
fn parsed_post(evt: &Event, lang: Lang, post: &str) -> Arc<Option<ParsedCode>> {
    evt.memo(&format!("code.post.{}", lang.id()), || {
        ParsedCode::parse(lang, post).ok()
    })
}

/// The event's edit images; an error when the edited file was too large to read, so a code
/// hook fails visibly (on a guarded event the user decides) instead of passing the edit unread.
fn images(evt: &Event) -> Result<Option<&EditImages>, HandlerError> {
    match evt.edit_images() {
        Some(images) => Ok(Some(images)),
        None => match capt_hook_core::edit::refused(evt) {
            Some(why) => Err(HandlerError::new(why.to_string())),
            None => Ok(None),
        },
    }
}

/// The images a lint looks at, unless there is nothing to lint or its trigger text is absent.
fn lint_images<'e>(
    evt: &'e Event,
    trigger: Option<&str>,
) -> Result<Option<&'e EditImages>, HandlerError> {
    Ok(images(evt)?.filter(|i| trigger.is_none_or(|t| i.post.contains(t))))
}

fn render(options: &LintOptions, violations: &[Violation]) -> Option<HookResult> {
    if violations.is_empty() {
        return None;
    }
    let list = format_violations(violations, &options.sep, options.max_shown);
    Some(verdict(options, &list))
}

fn verdict(options: &LintOptions, list: &str) -> HookResult {
    let message = options.message.replace("{violations}", list);
    if options.block {
        HookResult::block(message)
    } else {
        HookResult::warn(message)
    }
}

fn edit_tools() -> Condition {
    Condition::tool(&["Edit", "MultiEdit", "Write"])
}

fn not_test_file() -> Condition {
    Condition::Custom {
        name: "{ test_file = true }".into(),
        reads_tool: true,
        check: Arc::new(|evt: &Event| evt.file().is_some_and(is_test_file)),
    }
}

fn lang_files(lang: Lang) -> Condition {
    let globs = lang
        .globs()
        .iter()
        .map(|g| capt_hook_core::Glob::new(g))
        .collect();
    Condition::file_path(globs, false)
}

fn lint_kind(
    kind: &'static str,
    identity: String,
    options: &LintOptions,
    handler: HandlerFn,
    inline: bool,
) -> HookDef {
    custom(CustomKind {
        kind,
        default_events: EventSet::of(&[EventKind::PostToolUse]),
        guards: vec![edit_tools(), lang_files(options.lang)],
        skip_guards: vec![not_test_file()],
        handler,
        identity,
        skip_planning_agents: !options.block,
        default_max_fires: None,
        inline,
        manages_repetition: false,
    })
}

/// Lints the edited file; reports only violations on lines the edit changed (string mode
/// reports what its callback returns). Callbacks run on the handler pool, under the deadline.
#[track_caller]
pub fn lint(check: LintCheck, options: LintOptions) -> HookDef {
    let identity = format!(
        "{}\n{}",
        options.message,
        match &check {
            LintCheck::Pattern(p) => p.as_str().to_owned(),
            LintCheck::Regex(r) => r.as_str().to_owned(),
            // A callback has no text of its own; where it was defined tells two apart.
            LintCheck::Text(_) | LintCheck::Tree(_) => {
                std::panic::Location::caller().to_string()
            }
        }
    );
    let inline = !check.is_callback();
    let opts = options.clone();
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let Some(img) = lint_images(evt, opts.trigger.as_deref())? else {
            return Ok(None);
        };
        let changed = changed(evt);
        let changed = changed.as_deref();
        let violations = match &check {
            LintCheck::Pattern(p) => match parsed_post(evt, p.lang(), &img.post).as_ref() {
                Some(parsed) => capt_hook_code::lint_parsed(p, parsed, changed),
                None => Vec::new(),
            },
            LintCheck::Regex(r) => capt_hook_code::lint_regex(r, &img.post, changed),
            LintCheck::Text(f) => {
                let found = f(&img.post);
                return Ok((!found.is_empty())
                    .then(|| verdict(&opts, &list_strings(&found, &opts.sep, opts.max_shown))));
            }
            LintCheck::Tree(f) => match parsed_post(evt, opts.lang, &img.post).as_ref() {
                Some(parsed) => f(parsed)
                    .into_iter()
                    .filter(|v| on_changed_line(changed, v.line))
                    .collect(),
                None => Vec::new(),
            },
        };
        Ok(render(&opts, &violations))
    });
    lint_kind("lint", identity, &options, handler, inline)
}

/// Tree-mode diff lint: `check` compares the parsed pre- and post-edit files (the options'
/// language) and returns the violations the edit introduced. Runs on the handler pool.
#[track_caller]
pub fn diff_lint_tree<F>(check: F, options: LintOptions) -> HookDef
where
    F: Fn(&ParsedCode, &ParsedCode) -> Vec<Violation> + Send + Sync + 'static,
{
    let identity = format!("{}\n{}", options.message, std::panic::Location::caller());
    let opts = options.clone();
    let check: TreeDiffCheck = Arc::new(check);
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let Some(img) = lint_images(evt, opts.trigger.as_deref())? else {
            return Ok(None);
        };
        let after = parsed_post(evt, opts.lang, &img.post);
        let (Some(after), Ok(before)) = (after.as_ref(), ParsedCode::parse(opts.lang, &img.pre))
        else {
            return Ok(None);
        };
        Ok(render(&opts, &check(&before, after)))
    });
    lint_kind("diff_lint", identity, &options, handler, false)
}

/// Lints only what the edit introduces: matches present after it and absent before.
#[track_caller]
pub fn diff_lint(pattern: CodePattern, options: LintOptions) -> HookDef {
    let identity = format!("{}\n{}", options.message, pattern.as_str());
    let opts = options.clone();
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let Some(img) = lint_images(evt, opts.trigger.as_deref())? else {
            return Ok(None);
        };
        let after = parsed_post(evt, pattern.lang(), &img.post);
        let (Some(after), Ok(before)) =
            (after.as_ref(), ParsedCode::parse(pattern.lang(), &img.pre))
        else {
            return Ok(None);
        };
        Ok(render(
            &opts,
            &capt_hook_code::diff_lint_parsed(&pattern, &before, after),
        ))
    });
    lint_kind("diff_lint", identity, &options, handler, true)
}

/// Applies a set of style rules to an edit: one aggregated warning (or deny) with a section per
/// rule that found something on a changed line.
#[track_caller]
pub fn styleguide(rules: Vec<StyleRule>, block: bool, max_shown: usize) -> HookDef {
    // Closure rules are user code: they run on the pool, under the deadline.
    let inline = !rules
        .iter()
        .any(|r| matches!(r.check, StyleCheck::Custom { .. }));
    let mut langs: Vec<Lang> = Vec::new();
    for r in &rules {
        if !langs.contains(&r.lang()) {
            langs.push(r.lang());
        }
    }
    let identity = rules
        .iter()
        .map(|r| format!("{}:{}", r.name, r.message))
        .collect::<Vec<_>>()
        .join("\n");
    let globs = langs
        .iter()
        .flat_map(|l| l.globs())
        .map(|g| capt_hook_core::Glob::new(&g))
        .collect();
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let Some((path, lang)) = evt.file().and_then(|f| Some((f, Lang::from_path(f)?))) else {
            return Ok(None);
        };
        let Some(img) = images(evt)? else {
            return Ok(None);
        };
        let changed = changed(evt);
        let found = check_style(&rules, lang, path, &img.pre, &img.post, changed.as_deref());
        Ok(format_style_report(&found, max_shown).map(|m| {
            if block {
                HookResult::block(m)
            } else {
                HookResult::warn(m)
            }
        }))
    });
    custom(CustomKind {
        kind: "styleguide",
        default_events: EventSet::of(&[EventKind::PostToolUse]),
        guards: vec![edit_tools(), Condition::file_path(globs, false)],
        skip_guards: vec![not_test_file()],
        handler,
        identity,
        skip_planning_agents: !block,
        default_max_fires: None,
        inline,
        manages_repetition: false,
    })
}

/// The language a code pattern applies to: fixed, or taken from each event's file.
#[derive(Debug, Clone)]
pub enum LangPattern {
    /// Compiled for one language.
    Fixed(CodePattern),
    /// Compiled for every language it parses in; the file's extension picks one.
    ByFile(Box<AnyLangPattern>),
}

impl LangPattern {
    /// Compiles `pattern` for `lang`, or for every language when `lang` is `None`.
    pub fn new(pattern: &str, lang: Option<&str>) -> Result<LangPattern, DefError> {
        match lang {
            Some(l) => CodePattern::with_lang_id(pattern, l)
                .map(LangPattern::Fixed)
                .map_err(|e| DefError::new("pattern", e.to_string())),
            None => AnyLangPattern::new(pattern)
                .map(|p| LangPattern::ByFile(Box::new(p)))
                .map_err(|e| DefError::new("pattern", e.to_string())),
        }
    }

    fn for_file(&self, file: Option<&str>) -> Option<&CodePattern> {
        match self {
            LangPattern::Fixed(p) => Some(p),
            LangPattern::ByFile(any) => any.for_lang(Lang::from_path(file?)?),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            LangPattern::Fixed(p) => p.as_str(),
            LangPattern::ByFile(p) => p.as_str(),
        }
    }
}

/// The `pattern` condition: the edit's new text contains a structural match.
pub fn pattern_condition(pattern: LangPattern, project_only: bool) -> Condition {
    let name = format!("{{ pattern = {:?} }}", pattern.as_str());
    Condition::Custom {
        name,
        reads_tool: true,
        check: Arc::new(move |evt: &Event| {
            if project_only
                && !evt
                    .file()
                    .is_some_and(|f| is_project_path(f, evt.project_root()))
            {
                return false;
            }
            let Some(content) = evt.content().filter(|c| !c.is_empty()) else {
                return false;
            };
            pattern
                .for_file(evt.file())
                .is_some_and(|p| capt_hook_code::matches(p, &content))
        }),
    }
}

/// `comment_budget`: the edit leaves a comment block over `budget` that it created or
/// lengthened (see [`capt_hook_code::grown_over_budget`]), in a language with a grammar.
pub fn comment_budget_condition(budget: capt_hook_code::CommentBudget) -> Condition {
    let name = format!(
        "{{ comment_budget = {{ lines = {}, chars = {}, doc_lines = {}, doc_chars = {} }} }}",
        budget.lines, budget.chars, budget.doc_lines, budget.doc_chars
    );
    Condition::Custom {
        name,
        reads_tool: true,
        check: Arc::new(move |evt: &Event| {
            let Some(lang) = evt.file().and_then(capt_hook_code::Lang::from_path) else {
                return false;
            };
            let Some(images) = evt.edit_images() else {
                return false;
            };
            !capt_hook_code::grown_over_budget(lang, &images.pre, &images.post, &budget).is_empty()
        }),
    }
}

/// What `comment_edit` looks for in an edit's comments (the comment guard's two warnings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommentEdit {
    /// The edit rewords a block that was already over the default budget, without growing it
    /// (see [`capt_hook_code::reworded_over_budget`]).
    Reworded,
    /// More than half of the lines the edit adds, and at least
    /// [`MOSTLY_COMMENTS_MIN_LINES`] of them, are comment lines.
    MostlyComments,
}

/// Fewer added lines than this are too few to call an edit "mostly comments": a two-line edit
/// with one comment line is an ordinary edit.
pub const MOSTLY_COMMENTS_MIN_LINES: usize = 4;

/// `comment_edit`: the edit's comments are of the `kind` asked, in a language with a grammar.
pub fn comment_edit_condition(kind: CommentEdit) -> Condition {
    let name = match kind {
        CommentEdit::Reworded => "{ comment_edit = \"reworded\" }",
        CommentEdit::MostlyComments => "{ comment_edit = \"mostly_comments\" }",
    };
    Condition::Custom {
        name: name.to_owned(),
        reads_tool: true,
        check: Arc::new(move |evt: &Event| {
            let Some(lang) = evt.file().and_then(capt_hook_code::Lang::from_path) else {
                return false;
            };
            let Some(images) = evt.edit_images() else {
                return false;
            };
            match kind {
                CommentEdit::Reworded => !capt_hook_code::reworded_over_budget(
                    lang,
                    &images.pre,
                    &images.post,
                    &capt_hook_code::CommentBudget::default(),
                )
                .is_empty(),
                CommentEdit::MostlyComments => {
                    let (comment, all) =
                        capt_hook_code::added_comment_lines(lang, &images.pre, &images.post);
                    all >= MOSTLY_COMMENTS_MIN_LINES && comment * 2 > all
                }
            }
        }),
    }
}

/// Rewrites the new text of Edit / Write / MultiEdit / NotebookEdit calls with an ast-grep fix
/// template; nothing when the text comes out unchanged.
#[track_caller]
pub fn rewrite_code(
    pattern: LangPattern,
    replace: String,
    note: Option<String>,
    project_only: bool,
) -> HookDef {
    let identity = format!("{}\n{replace}", pattern.as_str());
    let handler: HandlerFn = Arc::new(move |evt: &Event| {
        let Some(file) = evt.file() else {
            return Ok(None);
        };
        if project_only && !is_project_path(file, evt.project_root()) {
            return Ok(None);
        }
        let Some(p) = pattern.for_file(Some(file)) else {
            return Ok(None);
        };
        let Some(input) = evt.tool_input() else {
            return Ok(None);
        };
        let mut updated = input.clone();
        let mut changed = false;
        let mut apply = |v: &mut Value| {
            if let Some(text) = v.as_str()
                && let Some(new) = capt_hook_code::rewrite_code(p, &replace, text)
            {
                *v = Value::String(new);
                changed = true;
            }
        };
        match evt.tool() {
            ToolCall::Edit { .. } => updated.get_mut("new_string").map(&mut apply),
            ToolCall::Write { .. } => updated.get_mut("content").map(&mut apply),
            ToolCall::NotebookEdit { .. } => updated.get_mut("new_source").map(&mut apply),
            ToolCall::MultiEdit { .. } => updated
                .get_mut("edits")
                .and_then(Value::as_array_mut)
                .map(|edits| {
                    for e in edits {
                        if let Some(v) = e.get_mut("new_string") {
                            apply(v);
                        }
                    }
                }),
            _ => None,
        };
        Ok(changed.then(|| HookResult::rewrite(updated, note.clone())))
    });
    custom(CustomKind {
        kind: "rewrite_code",
        default_events: EventSet::of(&[EventKind::PreToolUse]),
        guards: vec![Condition::tool(&[
            "Edit",
            "Write",
            "MultiEdit",
            "NotebookEdit",
        ])],
        skip_guards: Vec::new(),
        handler,
        identity,
        skip_planning_agents: true,
        default_max_fires: None,
        inline: true,
        manages_repetition: false,
    })
}

struct Structural(CommandRewrite);

impl capt_hook_engine::primitives::CommandRewriter for Structural {
    fn rewrite(&self, command: &str) -> Option<String> {
        self.0.rewrite(command)
    }
}

/// The structural `rewrite_command`: `$NAME` / `$$$NAME` metavariables matched over the
/// tree-sitter-bash tree; the rest of the line is untouched; nothing when unchanged.
#[track_caller]
pub fn rewrite_command_structural(pattern: &str, replace: &str) -> Result<HookDef, DefError> {
    let rw = CommandRewrite::new(pattern, replace)
        .map_err(|e| DefError::new("pattern", e.to_string()))?;
    Ok(rewrite_command_with(
        &format!("{pattern}\n{replace}"),
        Arc::new(Structural(rw)),
    ))
}

pub use capt_hook_code::is_structural;
