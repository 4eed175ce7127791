//! Inline tests as data: a simulated event and the verdict one hook must give for it. Every
//! [`Hook`](crate::Hook) carries its tests, so their data lives in the engine; the payload an
//! input becomes, running a test through the dispatcher and the reports `capt-hook test`
//! prints are the runner's (`capt-hook-testing`).

mod input;

pub use input::{
    DurationError, DurationSpec, FixtureError, Input, ReachSpec, RulingInput, TicketInput,
    TranscriptInput, load_transcript, py_str,
};

/// The verdict a test expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A block.
    Block,
    /// A warning.
    Warn,
    /// No result or an allow (`explicit`: only an allow).
    Allow {
        /// Require an actual allow.
        explicit: bool,
    },
    /// No result: the permission dialog would show.
    Ask,
    /// A rewrite.
    Rewrite,
}

/// An expectation: the verdict plus optional checks on its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    /// The verdict.
    pub verdict: Verdict,
    /// Regex the message must contain (rewrite: substring of the new `command`).
    pub pattern: Option<String>,
    /// Rewrite only: substrings each named field of the new input must contain.
    pub fields: Vec<(String, String)>,
    /// Regex the user-visible notice must contain.
    pub system_message: Option<String>,
}

impl Expect {
    fn of(verdict: Verdict) -> Expect {
        Expect {
            verdict,
            pattern: None,
            fields: Vec::new(),
            system_message: None,
        }
    }
    /// Expect a block.
    pub fn block() -> Expect {
        Self::of(Verdict::Block)
    }
    /// Expect a warning.
    pub fn warn() -> Expect {
        Self::of(Verdict::Warn)
    }
    /// Expect no result or an allow.
    pub fn allow() -> Expect {
        Self::of(Verdict::Allow { explicit: false })
    }
    /// Expect no result.
    pub fn ask() -> Expect {
        Self::of(Verdict::Ask)
    }
    /// Expect a rewrite.
    pub fn rewrite() -> Expect {
        Self::of(Verdict::Rewrite)
    }
    /// Expect an actual allow, not just the absence of a verdict.
    pub fn allow_explicit() -> Expect {
        Self::of(Verdict::Allow { explicit: true })
    }
    /// Adds a pattern the message must contain.
    pub fn matching(mut self, pattern: impl Into<String>) -> Expect {
        self.pattern = Some(pattern.into());
        self
    }

    /// Rewrite only: the new input's `field` must contain `needle`.
    pub fn field(mut self, field: impl Into<String>, needle: impl Into<String>) -> Expect {
        self.fields.push((field.into(), needle.into()));
        self
    }

    /// A regex the user-visible notice must contain.
    pub fn system_message(mut self, pattern: impl Into<String>) -> Expect {
        self.system_message = Some(pattern.into());
        self
    }

    /// The lower-case name of the expected verdict.
    pub fn name(&self) -> &'static str {
        match self.verdict {
            Verdict::Block => "block",
            Verdict::Warn => "warn",
            Verdict::Allow { .. } => "allow",
            Verdict::Ask => "ask",
            Verdict::Rewrite => "rewrite",
        }
    }
}

/// One inline test of a hook.
#[derive(Debug, Clone, PartialEq)]
pub struct InlineTest {
    /// The simulated event.
    pub input: Input,
    /// What the hook must say.
    pub expect: Expect,
    /// Where the test is written, when known.
    pub line: Option<usize>,
}
