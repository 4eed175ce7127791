//! Which python names, at each point of a program, still mean what an import or alias made
//! them (issue 28). Python rebinds names freely: after `wipe = print` the alias `wipe` of
//! `shutil.rmtree` deletes nothing, and inside `def report(wipe):` the parameter hides it.
//!
//! One forward walk over the tokens follows the blocks (indentation, one-line suites, lambda
//! bodies) and the statements that bind a name. A binding hides a name only where it surely ran
//! first: from its statement to the end of its own block, so a rebinding under `if`, `try` or in
//! a function body leaves the name alone outside it. A name the program may rebind out of sight
//! is never hidden (`global`, an attribute `x.name = …`, a keyword argument `update(name=…)`, a
//! name spelled in a string for `globals()`, `setattr` or `exec`). Code that may run again (a
//! loop or function body) also sees a later binding of the name to a known call. A binding to a
//! known module or call (`r = os.system`) makes an alias of it instead. A parameter hides a name
//! only while no known call is handed around as a value (`report(shutil.rmtree)`) or may be
//! fetched by name (`getattr`, `sys.modules`, a string spelling it), since such a value may
//! arrive through the parameter. Every walk is linear in the tokens; a few walks settle the facts
//! that depend on later ones (a later binding, a value handed around).

use std::collections::{HashMap, HashSet};

use super::{Aliases, Lang, Tok, call_runs, calls};

/// What the walks found.
#[derive(Debug, Default)]
pub(super) struct Names {
    /// Per token: a name that, there, no longer means its import or alias.
    pub shadowed: Vec<bool>,
    /// Aliases made by binding a name to a known module or call: name → `module` or
    /// `module.call`.
    pub aliases: Vec<(String, String)>,
}

/// Walks before giving up on hiding names (each later walk only hides fewer).
const MAX_WALKS: usize = 4;

/// Reads which names are rebound where, given the aliases the imports made.
pub(super) fn read(toks: &[Tok], offsets: &[usize], aliases: &Aliases) -> Names {
    let guarded = guarded(toks);
    let mut late: HashMap<String, usize> = HashMap::new();
    // A known call fetched by name may reach any parameter unseen.
    let mut params = !fetches_by_name(toks);
    let mut added: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for _ in 0..MAX_WALKS {
        let walk = Walk::new(toks, offsets, aliases, &guarded, &late, params).run();
        for alias in walk.added {
            if seen.insert(alias.clone()) {
                added.push(alias);
            }
        }
        let next_params = params && !walk.escapes;
        let mut next_late = late.clone();
        for (name, at) in &walk.binds {
            let q = next_late.entry(name.clone()).or_insert(*at);
            *q = (*q).max(*at);
        }
        if next_params == params && next_late == late {
            return Names {
                shadowed: walk.shadowed,
                aliases: added,
            };
        }
        params = next_params;
        late = next_late;
    }
    // Not settled: hide nothing, as before rebinding was read; the aliases still count.
    Names {
        shadowed: Vec::new(),
        aliases: added,
    }
}

/// Names the program may rebind without a statement we read: `global`/`nonlocal` names,
/// attributes assigned (`sys.modules[__name__].wipe = …`), keyword arguments
/// (`globals().update(wipe=…)`) and every word of every string (`globals()['wipe']`,
/// `setattr(m, 'wipe', …)`, `exec('wipe = …')`).
fn guarded(toks: &[Tok]) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut declaring = false;
    let punct = |k: usize, c: char| toks.get(k) == Some(&Tok::Punct(c));
    for (k, t) in toks.iter().enumerate() {
        match t {
            Tok::Ident(w) if w == "global" || w == "nonlocal" => declaring = true,
            Tok::Ident(w) => {
                let assigned = punct(k + 1, '=') && !punct(k + 2, '=');
                let before = k.checked_sub(1);
                let attr = before.is_some_and(|b| punct(b, '.')) && assigned;
                let keyword = before.is_some_and(|b| punct(b, '(') || punct(b, ',')) && assigned;
                if declaring || attr || keyword {
                    out.insert(w.clone());
                }
            }
            Tok::Str(Some(s)) => out.extend(
                s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            ),
            Tok::Newline | Tok::Punct(';') => declaring = false,
            _ => {}
        }
    }
    out
}

/// The call that makes a fresh directory (`Arg::Fresh`): its import binds the real one.
const FRESH: (&str, &str) = ("tempfile", "mkdtemp");

/// Names that fetch a module or function by a name computed or spelled in a string.
const FETCHERS: &[&str] = &[
    "getattr",
    "import_module",
    "__import__",
    "modules",
    "globals",
    "locals",
    "vars",
    "__dict__",
    "__builtins__",
    "builtins",
    "__getattribute__",
];

/// Whether the program may fetch a known call without naming it in code: a fetcher
/// (`getattr(shutil, n)`, `sys.modules[m]`, `__import__(m)`) or a string spelling a known
/// module or call (`'rmtree'`, a pickle naming it).
fn fetches_by_name(toks: &[Tok]) -> bool {
    let known = |w: &str| {
        !w.is_empty()
            && calls(Lang::Python)
                .iter()
                .any(|(m, names, _)| *m == w || names.contains(&w))
    };
    toks.iter().any(|t| match t {
        Tok::Ident(w) => FETCHERS.contains(&w.as_str()),
        Tok::Str(Some(s)) => s
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(known),
        // A string we cannot read may spell anything.
        Tok::Str(None) => true,
        _ => false,
    })
}

fn is_module(module: &str) -> bool {
    !module.is_empty() && calls(Lang::Python).iter().any(|(m, _, _)| *m == module)
}

fn is_call(module: &str, call: &str) -> bool {
    calls(Lang::Python)
        .iter()
        .any(|(m, names, _)| *m == module && names.contains(&call))
}

/// A statement's binding of a name.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    /// The known modules or calls the bound value mentions; none: a value we cannot classify.
    targets: Vec<String>,
    /// A parameter without a known default: its value comes from the caller.
    param: bool,
    /// Whether the targets become aliases (imports made theirs already).
    alias: bool,
    /// The token the binding is at.
    at: usize,
}

impl Binding {
    fn new(name: &str, targets: Vec<String>, at: usize) -> Self {
        Binding {
            name: name.to_owned(),
            targets,
            param: false,
            alias: true,
            at,
        }
    }
}

/// One entry of a name's bindings: the block it holds in, and whether it hides the name.
#[derive(Debug, Clone, Copy)]
struct Event {
    block: usize,
    hides: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The program's top level or an indented suite: the indentation of its lines.
    Body(usize),
    /// A suite on its header's line (`if x: a; b`).
    Line,
    /// A lambda's body, at this bracket depth.
    Lambda(usize),
}

#[derive(Debug)]
struct Block {
    kind: Kind,
    /// Its code may run again after later code (a loop or function body).
    reentrant: bool,
    /// Names bound in it, to drop when it closes.
    names: Vec<String>,
    /// A binding the enclosing block gets when this one closes (`class NAME`: the body runs
    /// before the name is bound).
    on_close: Option<Binding>,
}

/// A compound statement's header, read up to its colon.
#[derive(Debug, Default)]
struct Header {
    reentrant: bool,
    with: bool,
    except: bool,
    /// Bindings in force in the body (parameters, the loop name, `except … as name`).
    body: Vec<Binding>,
    /// Bindings for the enclosing block at the colon (`def NAME`, `with … as name`).
    after: Vec<Binding>,
    on_close: Option<Binding>,
}

/// Where an expression read ahead ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The statement's end (an assignment's value).
    Statement,
    /// A header's colon (a loop's iterable).
    Colon,
    /// A `def` parameter's default.
    DefDefault,
    /// A lambda parameter's default.
    LambdaDefault,
}

struct Walk<'a> {
    toks: &'a [Tok],
    offsets: &'a [usize],
    guarded: &'a HashSet<String>,
    /// Per name: the last token binding it to a known module or call (the previous walk's).
    late: &'a HashMap<String, usize>,
    /// Whether parameters hide names.
    params: bool,
    aliases: Aliases,
    blocks: Vec<Block>,
    bound: HashMap<String, Vec<Event>>,
    /// Tokens that are the name a statement binds (not a use of it).
    target: Vec<bool>,
    /// Tokens mentioning a known call as the whole value bound to a name (an alias, not a
    /// value handed around).
    aliased: Vec<bool>,
    /// Tokens before this one belong to an import (or `global`, `del`) statement.
    quiet_until: usize,
    shadowed: Vec<bool>,
    /// A known call or module is used as a value somewhere (not called, not aliased).
    escapes: bool,
    binds: HashMap<String, usize>,
    added: Vec<(String, String)>,
}

impl<'a> Walk<'a> {
    fn new(
        toks: &'a [Tok],
        offsets: &'a [usize],
        aliases: &Aliases,
        guarded: &'a HashSet<String>,
        late: &'a HashMap<String, usize>,
        params: bool,
    ) -> Self {
        let n = toks.len();
        Walk {
            toks,
            offsets,
            guarded,
            late,
            params,
            aliases: aliases.clone(),
            blocks: vec![Block {
                kind: Kind::Body(0),
                reentrant: false,
                names: Vec::new(),
                on_close: None,
            }],
            bound: HashMap::new(),
            target: vec![false; n],
            aliased: vec![false; n],
            quiet_until: 0,
            shadowed: vec![false; n],
            escapes: false,
            binds: HashMap::new(),
            added: Vec::new(),
        }
    }

    fn ident(&self, k: usize) -> Option<&'a str> {
        match self.toks.get(k) {
            Some(Tok::Ident(s)) => Some(s.as_str()),
            _ => None,
        }
    }

    fn punct(&self, k: usize, c: char) -> bool {
        self.toks.get(k) == Some(&Tok::Punct(c))
    }

    /// A line break after a backslash continues the line.
    fn continued(&self, k: usize) -> bool {
        k.checked_sub(1).is_some_and(|b| self.punct(b, '\\'))
    }

    fn top(&self) -> &Block {
        // The top level is never closed.
        &self.blocks[self.blocks.len() - 1]
    }

    /// The indentation of token `k`, the first of its line.
    fn column(&self, k: usize) -> usize {
        match k.checked_sub(1) {
            Some(b) => self.offsets[k].saturating_sub(self.offsets[b] + 1),
            None => self.offsets.first().copied().unwrap_or(0),
        }
    }

    fn run(mut self) -> Self {
        let mut depth = 0usize;
        let mut line_start = true;
        let mut first_line = true;
        let mut stmt_start = true;
        let mut header: Option<Header> = None;
        let mut pending: Option<Header> = None;
        // Lambdas whose colon is ahead: the colon's token and the parameters.
        let mut lambdas: Vec<(usize, Vec<Binding>)> = Vec::new();
        // Bindings a statement makes once it has run (its value is read first).
        let mut at_end: Vec<Binding> = Vec::new();
        let toks = self.toks;
        for (k, tok) in toks.iter().enumerate() {
            if *tok == Tok::Newline {
                if depth == 0 && !self.continued(k) {
                    self.apply(std::mem::take(&mut at_end));
                    while matches!(self.top().kind, Kind::Line | Kind::Lambda(_)) {
                        self.pop();
                    }
                    lambdas.clear();
                    header = None;
                    line_start = true;
                    stmt_start = true;
                }
                continue;
            }
            if line_start {
                line_start = false;
                let col = self.column(k);
                if first_line {
                    first_line = false;
                    self.blocks[0].kind = Kind::Body(col);
                }
                self.open_line(col, pending.take());
            }
            if stmt_start && depth == 0 {
                stmt_start = false;
                header = None;
                self.statement(k, &mut header, &mut at_end);
            }
            match tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth = depth.saturating_sub(1);
                    self.close_lambdas(|d| d > depth);
                }
                Tok::Punct(',') => self.close_lambdas(|d| d >= depth),
                Tok::Punct(';') if depth == 0 => {
                    self.apply(std::mem::take(&mut at_end));
                    self.close_lambdas(|_| true);
                    lambdas.clear();
                    header = None;
                    stmt_start = true;
                }
                // Not the walrus (`while chunk := f.read():`).
                Tok::Punct(':') if !self.punct(k + 1, '=') => {
                    if lambdas.last().is_some_and(|(colon, _)| *colon == k) {
                        let params = lambdas.pop().map(|(_, p)| p).unwrap_or_default();
                        self.open(
                            Kind::Lambda(depth),
                            Header {
                                reentrant: true,
                                body: params,
                                ..Header::default()
                            },
                        );
                    } else if depth == 0
                        && let Some(mut h) = header.take()
                    {
                        self.apply(std::mem::take(&mut h.after));
                        if matches!(self.toks.get(k + 1), None | Some(Tok::Newline)) {
                            pending = Some(h);
                        } else {
                            self.open(Kind::Line, h);
                            stmt_start = true;
                        }
                    }
                }
                Tok::Ident(w) => {
                    match w.as_str() {
                        "lambda" => self.lambda(k, &mut lambdas),
                        "for" => self.close_lambdas(|d| d == depth),
                        "as" if depth == 0 => {
                            if let Some(h) = header.as_mut()
                                && (h.with || h.except)
                                && let Some(name) = self.ident(k + 1)
                                && (self.punct(k + 2, ':') || (h.with && self.punct(k + 2, ',')))
                            {
                                self.target[k + 1] = true;
                                let b = Binding::new(name, Vec::new(), k + 1);
                                if h.with {
                                    h.after.push(b);
                                } else {
                                    h.body.push(b);
                                }
                            }
                        }
                        _ => {}
                    }
                    self.name_at(k);
                }
                _ => {}
            }
        }
        // The last statement's bindings count for later walks (`late`).
        self.apply(at_end);
        self
    }

    /// Reads the parameters of the lambda at `k` up to its colon. A lambda whose defaults hold
    /// another lambda gets no body (its parameters hide nothing): reading nested headers again
    /// and again would not be linear.
    fn lambda(&mut self, k: usize, lambdas: &mut Vec<(usize, Vec<Binding>)>) {
        if let Some((params, end)) = self.params(k + 1, true)
            && self.punct(end, ':')
        {
            lambdas.push((end, params));
        }
    }

    /// Starts a logical line at indentation `col`: closes the suites it leaves and opens the
    /// one a header ending the last line began (or, for a deeper line no header began, a suite
    /// taken to run again, as we do not know what it is).
    fn open_line(&mut self, col: usize, pending: Option<Header>) {
        while self.blocks.len() > 1 && matches!(self.top().kind, Kind::Body(c) if c > col) {
            self.pop();
        }
        let inner = match self.top().kind {
            Kind::Body(c) => c,
            Kind::Line | Kind::Lambda(_) => col,
        };
        if col > inner {
            let h = pending.unwrap_or(Header {
                reentrant: true,
                ..Header::default()
            });
            self.open(Kind::Body(col), h);
        }
    }

    fn open(&mut self, kind: Kind, h: Header) {
        let reentrant = self.top().reentrant || h.reentrant;
        self.blocks.push(Block {
            kind,
            reentrant,
            names: Vec::new(),
            on_close: h.on_close,
        });
        self.apply(h.body);
    }

    fn pop(&mut self) {
        if self.blocks.len() <= 1 {
            return;
        }
        let idx = self.blocks.len() - 1;
        let Some(block) = self.blocks.pop() else {
            return;
        };
        for name in &block.names {
            if let Some(stack) = self.bound.get_mut(name) {
                while stack.last().is_some_and(|e| e.block == idx) {
                    stack.pop();
                }
            }
        }
        if let Some(b) = block.on_close {
            self.bind(b);
        }
    }

    fn close_lambdas(&mut self, closes: impl Fn(usize) -> bool) {
        while let Kind::Lambda(d) = self.top().kind
            && closes(d)
        {
            self.pop();
        }
    }

    fn apply(&mut self, bindings: Vec<Binding>) {
        for b in bindings {
            self.bind(b);
        }
    }

    /// Binds a name in the innermost block.
    fn bind(&mut self, b: Binding) {
        let hides = b.targets.is_empty();
        if hides && b.param && !self.params {
            return;
        }
        if !hides {
            let q = self.binds.entry(b.name.clone()).or_insert(b.at);
            *q = (*q).max(b.at);
            if b.alias {
                for t in &b.targets {
                    self.aliases.add_module(&b.name, t);
                    self.added.push((b.name.clone(), t.clone()));
                }
            }
        }
        let block = self.blocks.len() - 1;
        let stack = self.bound.entry(b.name.clone()).or_default();
        match stack.last_mut() {
            Some(e) if e.block == block => e.hides = hides,
            _ => {
                stack.push(Event { block, hides });
                self.blocks[block].names.push(b.name);
            }
        }
    }

    /// Whether `name` at token `k` no longer means its import or alias.
    fn hidden(&self, name: &str, k: usize) -> bool {
        if self.guarded.contains(name) {
            return false;
        }
        let Some(e) = self.bound.get(name).and_then(|s| s.last()) else {
            return false;
        };
        e.hides && !(self.top().reentrant && self.late.get(name).is_some_and(|&q| q > k))
    }

    /// Notes what the name at `k` (a use, not a binding) means.
    fn name_at(&mut self, k: usize) {
        if self.target[k] {
            // A name being bound (`def wipe(p):`) is no call of what it meant.
            self.shadowed[k] = true;
            return;
        }
        if k.checked_sub(1).is_some_and(|b| self.punct(b, '.')) {
            return;
        }
        let Some(name) = self.ident(k) else {
            return;
        };
        if self.hidden(name, k) {
            self.shadowed[k] = true;
        } else if k >= self.quiet_until && !self.aliased[k] && self.mention(k).is_some() {
            self.escapes = true;
        }
    }

    /// The known module or call the name at `k` refers to without calling it (`os`,
    /// `shutil.rmtree`, an alias of either, `__import__('os')`).
    fn mention(&self, k: usize) -> Option<String> {
        let name = self.ident(k)?;
        if name == "__import__" {
            return match self.toks.get(k + 2) {
                Some(Tok::Str(Some(m))) if self.punct(k + 1, '(') && self.punct(k + 3, ')') => {
                    self.member(m, k + 4)
                }
                _ => None,
            };
        }
        if self.punct(k + 1, '(') || self.hidden(name, k) {
            return None;
        }
        if self.punct(k + 1, '.') {
            let module = self.aliases.module(name).unwrap_or(name);
            return self.member(module, k + 1);
        }
        self.referent(name)
    }

    /// `module` itself when no `.` follows at `dot`, else its call named after the dot, when
    /// they are known and not called there.
    fn member(&self, module: &str, dot: usize) -> Option<String> {
        if !self.punct(dot, '.') {
            return is_module(module).then(|| module.to_owned());
        }
        let call = self.ident(dot + 1)?;
        if self.punct(dot + 2, '(') || self.punct(dot + 2, '.') {
            return None;
        }
        is_call(module, call).then(|| format!("{module}.{call}"))
    }

    /// The known module or call a bare name stands for.
    fn referent(&self, name: &str) -> Option<String> {
        if let Some(t) = self.aliases.modules.get(name).and_then(|ts| {
            ts.iter()
                .find(|t| is_module(t) || call_runs(Lang::Python, t).is_some())
        }) {
            return Some(t.clone());
        }
        if let Some(m) = self
            .aliases
            .names
            .get(name)
            .and_then(|ms| ms.iter().find(|m| is_call(m, name)))
        {
            return Some(format!("{m}.{name}"));
        }
        if is_call("", name) {
            return Some(format!(".{name}"));
        }
        is_module(name).then(|| name.to_owned())
    }

    /// The index ending the statement that starts at `k`.
    fn statement_end(&self, k: usize) -> usize {
        let mut depth = 0usize;
        let mut j = k;
        while let Some(t) = self.toks.get(j) {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
                Tok::Punct(';') if depth == 0 => break,
                Tok::Newline if depth == 0 && !self.continued(j) => break,
                _ => {}
            }
            j += 1;
        }
        j
    }

    /// Reads the statement starting at `k` for the names it binds.
    fn statement(&mut self, k: usize, header: &mut Option<Header>, at_end: &mut Vec<Binding>) {
        let at = if self.ident(k) == Some("async") {
            k + 1
        } else {
            k
        };
        let Some(word) = self.ident(at) else {
            return;
        };
        let mut h = Header::default();
        match word {
            "def" => {
                h.reentrant = true;
                if let Some(name) = self.ident(at + 1) {
                    self.target[at + 1] = true;
                    h.after.push(Binding::new(name, Vec::new(), at + 1));
                    if self.punct(at + 2, '(')
                        && let Some((params, _)) = self.params(at + 3, false)
                    {
                        h.body = params;
                    }
                }
            }
            "class" => {
                if let Some(name) = self.ident(at + 1) {
                    self.target[at + 1] = true;
                    h.on_close = Some(Binding::new(name, Vec::new(), at + 1));
                }
            }
            "for" => {
                h.reentrant = true;
                // `for a, b in …` binds more than one name: left alone.
                if let Some(name) = self.ident(at + 1)
                    && self.ident(at + 2) == Some("in")
                {
                    self.target[at + 1] = true;
                    let (targets, _) = self.classify(at + 3, End::Colon);
                    h.body.push(Binding::new(name, targets, at + 1));
                }
            }
            "while" => h.reentrant = true,
            "with" => h.with = true,
            "except" => h.except = true,
            "if" | "elif" | "else" | "try" | "finally" => {}
            // Soft keywords: `match x:` but not `match = …` or `match(x)`… alone.
            "match" | "case"
                if !matches!(
                    self.toks.get(at + 1),
                    None | Some(
                        Tok::Newline | Tok::Punct(':' | '=' | '.' | ',' | ')' | ']' | '}' | ';')
                    )
                ) => {}
            "import" | "from" => {
                self.quiet_until = self.quiet_until.max(self.statement_end(at));
                self.import(at, at_end);
                return;
            }
            "global" | "nonlocal" | "del" => {
                self.quiet_until = self.quiet_until.max(self.statement_end(at));
                return;
            }
            _ => {
                self.assignment(at, at_end);
                return;
            }
        }
        *header = Some(h);
    }

    /// `name = value` or `name: T = value`.
    fn assignment(&mut self, at: usize, at_end: &mut Vec<Binding>) {
        let Some(name) = self.ident(at) else {
            return;
        };
        let value = if self.punct(at + 1, '=') && !self.punct(at + 2, '=') {
            Some(at + 2)
        } else if self.punct(at + 1, ':') {
            self.annotated_value(at + 2)
        } else {
            None
        };
        let Some(value) = value else {
            return;
        };
        self.target[at] = true;
        let (targets, _) = self.classify(value, End::Statement);
        at_end.push(Binding::new(name, targets, at));
    }

    /// The value's first token in an annotated assignment whose annotation starts at `k`.
    fn annotated_value(&self, k: usize) -> Option<usize> {
        let end = self.statement_end(k);
        let mut depth = 0usize;
        for j in k..end {
            match self.toks[j] {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth = depth.saturating_sub(1),
                Tok::Punct('=')
                    if depth == 0
                        && !self.punct(j + 1, '=')
                        && !matches!(self.toks[j - 1], Tok::Punct('=' | '!' | '<' | '>')) =>
                {
                    return Some(j + 1);
                }
                _ => {}
            }
        }
        None
    }

    /// `import a.b as c, d` and `from m import x as y, z`: each name bound, to its module or
    /// call when that is a known one.
    fn import(&mut self, at: usize, at_end: &mut Vec<Binding>) {
        let imported = |b: Binding| Binding { alias: false, ..b };
        let mut j = at + 1;
        if self.ident(at) == Some("import") {
            while let Some(first) = self.ident(j) {
                let (module, next) = self.dotted(j);
                j = next;
                let (local, bound) = match self.ident(j + 1) {
                    Some(alias) if self.ident(j) == Some("as") => {
                        j += 2;
                        (alias, module)
                    }
                    // `import os.path` binds `os`.
                    _ => (first, first.to_owned()),
                };
                let targets = if is_module(&bound) || bound == FRESH.0 {
                    vec![bound]
                } else {
                    Vec::new()
                };
                at_end.push(imported(Binding::new(local, targets, at)));
                if !self.punct(j, ',') {
                    break;
                }
                j += 1;
            }
            return;
        }
        // A relative import (`from . import x`) binds names of a module we do not know: left
        // alone, as is `from unknown import *`.
        if self.ident(j).is_none() {
            return;
        }
        let (module, next) = self.dotted(j);
        j = next;
        if self.ident(j) != Some("import") {
            return;
        }
        j += 1;
        if self.punct(j, '(') {
            j += 1;
        }
        if self.punct(j, '*') {
            for (m, names, _) in calls(Lang::Python) {
                if *m == module {
                    for n in *names {
                        let t = vec![format!("{module}.{n}")];
                        at_end.push(imported(Binding::new(n, t, at)));
                    }
                }
            }
            return;
        }
        loop {
            while self.toks.get(j) == Some(&Tok::Newline) {
                j += 1;
            }
            let Some(name) = self.ident(j) else {
                break;
            };
            let local = match self.ident(j + 2) {
                Some(alias) if self.ident(j + 1) == Some("as") => {
                    j += 3;
                    alias
                }
                _ => {
                    j += 1;
                    name
                }
            };
            let targets = if is_call(&module, name) || (module.as_str(), name) == FRESH {
                vec![format!("{module}.{name}")]
            } else {
                Vec::new()
            };
            at_end.push(imported(Binding::new(local, targets, at)));
            while self.toks.get(j) == Some(&Tok::Newline) {
                j += 1;
            }
            if !self.punct(j, ',') {
                break;
            }
            j += 1;
        }
    }

    /// A dotted name starting at `j` (`os.path`), and the index past it.
    fn dotted(&self, mut j: usize) -> (String, usize) {
        let mut out = self.ident(j).unwrap_or_default().to_owned();
        j += 1;
        while self.punct(j, '.')
            && let Some(part) = self.ident(j + 1)
        {
            out.push('.');
            out.push_str(part);
            j += 2;
        }
        (out, j)
    }

    /// The parameters from `k` to the closing `)` (or, for a lambda, its colon), with the
    /// index of that end; `None` for a lambda whose defaults hold another lambda.
    fn params(&mut self, k: usize, lambda: bool) -> Option<(Vec<Binding>, usize)> {
        let mut out: Vec<Binding> = Vec::new();
        let mut depth = 0usize;
        let mut expect = true;
        let mut j = k;
        while let Some(t) = self.toks.get(j) {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                Tok::Punct(':') if depth == 0 && lambda => break,
                Tok::Punct(';') | Tok::Newline if depth == 0 && lambda => break,
                Tok::Ident(w) if lambda && w == "lambda" => return None,
                Tok::Punct(',') if depth == 0 => expect = true,
                Tok::Punct('*' | '/') if depth == 0 => {}
                Tok::Punct('=') if depth == 0 => {
                    let end = if lambda {
                        End::LambdaDefault
                    } else {
                        End::DefDefault
                    };
                    let (targets, next) = self.classify(j + 1, end);
                    if lambda && self.ident(next) == Some("lambda") {
                        return None;
                    }
                    if let Some(p) = out.last_mut()
                        && !targets.is_empty()
                    {
                        p.targets = targets;
                    }
                    expect = false;
                    j = next;
                    continue;
                }
                Tok::Ident(name) if depth == 0 && expect => {
                    self.target[j] = true;
                    out.push(Binding {
                        param: true,
                        ..Binding::new(name, Vec::new(), j)
                    });
                    expect = false;
                }
                Tok::Newline => {}
                _ if depth == 0 => expect = false,
                _ => {}
            }
            j += 1;
        }
        Some((out, j))
    }

    /// The known modules and calls the expression from `k` mentions without calling them, and
    /// the index of its end. Mentions outside any bracket are the value itself (aliased);
    /// others (`f(shutil.rmtree)`, `[os.system]`) are handed around and count as escapes.
    fn classify(&mut self, k: usize, end: End) -> (Vec<String>, usize) {
        let mut depth = 0usize;
        let mut lambdas = 0usize;
        let mut targets = Vec::new();
        let mut j = k;
        while let Some(t) = self.toks.get(j) {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                Tok::Punct(';') if depth == 0 => break,
                Tok::Newline
                    if depth == 0
                        && !self.continued(j)
                        && matches!(end, End::Statement | End::Colon) =>
                {
                    break;
                }
                Tok::Punct(',')
                    if depth == 0 && matches!(end, End::DefDefault | End::LambdaDefault) =>
                {
                    break;
                }
                Tok::Ident(w) if w == "lambda" && end == End::LambdaDefault => break,
                Tok::Ident(w) if w == "lambda" && depth == 0 => lambdas += 1,
                Tok::Punct(':') if depth == 0 => {
                    if lambdas > 0 {
                        lambdas -= 1;
                    } else if matches!(end, End::Colon | End::LambdaDefault) {
                        break;
                    }
                }
                Tok::Ident(_) if !j.checked_sub(1).is_some_and(|b| self.punct(b, '.')) => {
                    if let Some(t) = self.mention(j) {
                        if depth == 0 {
                            self.aliased[j] = true;
                        }
                        targets.push(t);
                    }
                }
                _ => {}
            }
            j += 1;
        }
        (targets, j)
    }
}
