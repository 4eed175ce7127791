//! Token lists: argv prefixes where `*` stands for any one word and `a|b` for either word.

use std::fmt;

/// One token of an argv prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `*`: exactly one word, whatever it is.
    Any,
    /// One of these words, exactly.
    Word(Vec<String>),
}

/// Why a token list is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Nothing to match.
    #[error("the token list is empty")]
    Empty,
    /// A token with nothing in it (`""` or `"a|"`).
    #[error("token {index} is empty")]
    EmptyToken {
        /// Position in the list.
        index: usize,
    },
}

/// An argv prefix to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens(Vec<Token>);

impl Tokens {
    /// Parses tokens as written in a hook file.
    pub fn new<S: AsRef<str>>(tokens: &[S]) -> Result<Tokens, TokenError> {
        if tokens.is_empty() {
            return Err(TokenError::Empty);
        }
        let mut out = Vec::with_capacity(tokens.len());
        for (index, t) in tokens.iter().enumerate() {
            let t = t.as_ref();
            if t == "*" {
                out.push(Token::Any);
                continue;
            }
            let alts: Vec<String> = t.split('|').map(str::to_owned).collect();
            if alts.iter().any(String::is_empty) {
                return Err(TokenError::EmptyToken { index });
            }
            out.push(Token::Word(alts));
        }
        Ok(Tokens(out))
    }

    /// True when a `*` token is present.
    pub fn has_wildcard(&self) -> bool {
        self.0.iter().any(|t| matches!(t, Token::Any))
    }

    /// True when `argv` starts with these tokens.
    pub fn is_prefix_of(&self, argv: &[&str]) -> bool {
        argv.len() >= self.0.len()
            && self.0.iter().zip(argv).all(|(t, w)| match t {
                Token::Any => true,
                Token::Word(alts) => alts.iter().any(|a| a == w),
            })
    }

    /// True when a command's `executable` and `args` start with these tokens (no allocation).
    pub fn is_prefix_of_command(&self, cmd: &capt_hook_shell::Command) -> bool {
        if cmd.executable.is_empty() || cmd.args.len() + 1 < self.0.len() {
            return false;
        }
        let words =
            std::iter::once(cmd.executable.as_str()).chain(cmd.args.iter().map(String::as_str));
        self.0.iter().zip(words).all(|(t, w)| match t {
            Token::Any => true,
            Token::Word(alts) => alts.iter().any(|a| a == w),
        })
    }

    /// The regex a token list stands for when it has to match raw text: each token escaped,
    /// `*` as one run of non-space, alternatives grouped, joined by whitespace.
    pub fn to_regex(&self) -> String {
        self.0
            .iter()
            .map(|t| match t {
                Token::Any => r"\S+".to_owned(),
                Token::Word(alts) if alts.len() == 1 => regex::escape(&alts[0]),
                Token::Word(alts) => format!(
                    "(?:{})",
                    alts.iter()
                        .map(|a| regex::escape(a))
                        .collect::<Vec<_>>()
                        .join("|")
                ),
            })
            .collect::<Vec<_>>()
            .join(r"\s+")
    }
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words: Vec<String> = self
            .0
            .iter()
            .map(|t| match t {
                Token::Any => "\"*\"".to_owned(),
                Token::Word(a) => format!("{:?}", a.join("|")),
            })
            .collect();
        write!(f, "[{}]", words.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_wildcards_and_alternatives() {
        let t = Tokens::new(&["git", "stash|shelve"]).unwrap();
        assert!(t.is_prefix_of(&["git", "stash", "pop"]));
        assert!(t.is_prefix_of(&["git", "shelve"]));
        assert!(!t.is_prefix_of(&["git", "stashpop"]));
        assert!(!t.is_prefix_of(&["git"]));
        let w = Tokens::new(&["docker", "*", "prune"]).unwrap();
        assert!(w.is_prefix_of(&["docker", "image", "prune", "-a"]));
        assert!(!w.is_prefix_of(&["docker", "prune"]));
        assert_eq!(w.to_regex(), r"docker\s+\S+\s+prune");
        assert_eq!(Tokens::new::<&str>(&[]).unwrap_err(), TokenError::Empty);
        assert!(Tokens::new(&["a|"]).is_err());
    }
}
