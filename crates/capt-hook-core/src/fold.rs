//! The deny-wins fold: many hooks' results become one verdict.
//!
//! Results are walked in registration order. Any block wins, and only warnings that opted in
//! (`advisory_on_deny`) ride along on it. Otherwise the first rewrite, else the first allow,
//! wins and carries the warnings as context. Otherwise the warnings join into one. One hook's
//! approval can therefore never hide another hook's block.

use crate::result::{Action, HookResult};

/// Heads the warnings that ride on a deny, so the agent does not mistake them for its reason.
pub const ADVISORY_SEPARATOR: &str = "Additional advisories (not the reason for the deny):";

/// One hook's contribution to the fold.
#[derive(Debug, Clone)]
pub struct FoldInput {
    /// The hook's result (`None` when it matched nothing or returned nothing).
    pub result: Option<HookResult>,
    /// Handler-backed hooks are dropped after an earlier block; declarative ones still count.
    pub declarative: bool,
    /// This hook's warning rides on another hook's deny.
    pub advisory_on_deny: bool,
}

/// Folds results given in registration order into at most one result.
pub fn fold(inputs: impl IntoIterator<Item = FoldInput>) -> Option<HookResult> {
    let mut blocked = false;
    let mut blocks: Vec<String> = Vec::new();
    let mut warns: Vec<String> = Vec::new();
    let mut advisories: Vec<String> = Vec::new();
    let mut rewrite: Option<HookResult> = None;
    let mut allow: Option<HookResult> = None;
    let mut warn_approve = false;
    let mut notices: Vec<String> = Vec::new();

    for input in inputs {
        if blocked && !input.declarative && !input.advisory_on_deny {
            continue;
        }
        let Some(result) = input.result else {
            continue;
        };
        if let Some(n) = result.system_message.as_ref().filter(|n| !n.is_empty()) {
            notices.push(n.clone());
        }
        match result.action {
            Action::Block => {
                blocked = true;
                if let Some(m) = result.message.filter(|m| !m.is_empty()) {
                    blocks.push(m);
                }
            }
            Action::Rewrite => {
                if rewrite.is_none() {
                    rewrite = Some(result);
                }
            }
            Action::Allow => {
                if allow.is_none() {
                    allow = Some(result);
                }
            }
            Action::Warn => {
                if let Some(m) = result.message.filter(|m| !m.is_empty()) {
                    if input.advisory_on_deny {
                        advisories.push(m.clone());
                    }
                    warns.push(m);
                    warn_approve |= result.approve;
                }
            }
        }
    }

    let mut out = if blocked {
        let mut parts = blocks;
        if !advisories.is_empty() {
            parts.push(ADVISORY_SEPARATOR.to_owned());
            parts.extend(advisories);
        }
        let message = (!parts.is_empty()).then(|| parts.join("\n\n"));
        let mut r = HookResult::block(String::new());
        r.message = message;
        Some(r)
    } else if let Some(mut winner) = rewrite.or(allow) {
        winner.system_message = None;
        if !warns.is_empty() {
            if winner.action == Action::Rewrite {
                let mut parts: Vec<String> = winner.note.take().into_iter().collect();
                parts.extend(warns);
                winner.note = Some(parts.join("\n\n"));
            } else {
                winner.message = Some(warns.join("\n\n"));
            }
        }
        Some(winner)
    } else if !warns.is_empty() {
        let mut r = HookResult::warn(warns.join("\n\n"));
        r.approve = warn_approve;
        Some(r)
    } else {
        None
    };
    if let Some(r) = out.as_mut() {
        r.system_message = None;
    }
    if notices.is_empty() {
        return out;
    }
    let notice = notices.join("\n\n");
    Some(match out {
        Some(mut r) => {
            r.system_message = Some(notice);
            r
        }
        None => HookResult::notice_only().with_system_message(notice),
    })
}

impl HookResult {
    /// A result that carries only a user-visible notice (rendered as `{"systemMessage": …}`).
    pub fn notice_only() -> HookResult {
        let mut r = HookResult::warn(String::new());
        r.message = None;
        r.approve = false;
        r
    }

    /// True for a result made by [`HookResult::notice_only`].
    pub fn is_notice_only(&self) -> bool {
        self.action == Action::Warn && self.message.is_none() && self.system_message.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(r: Option<HookResult>) -> FoldInput {
        FoldInput {
            result: r,
            declarative: true,
            advisory_on_deny: false,
        }
    }
    fn handler(r: Option<HookResult>) -> FoldInput {
        FoldInput {
            declarative: false,
            ..decl(r)
        }
    }
    fn advisory(r: Option<HookResult>) -> FoldInput {
        FoldInput {
            advisory_on_deny: true,
            ..decl(r)
        }
    }

    #[test]
    fn deny_wins_and_only_advisories_ride_along() {
        let out = fold([
            advisory(Some(HookResult::warn("adv A"))),
            decl(Some(HookResult::block("no pushing"))),
            decl(Some(HookResult::warn("plain C"))),
            advisory(Some(HookResult::warn("adv D"))),
        ])
        .unwrap();
        assert_eq!(out.action, Action::Block);
        assert_eq!(
            out.message.unwrap(),
            format!("no pushing\n\n{ADVISORY_SEPARATOR}\n\nadv A\n\nadv D")
        );
    }

    #[test]
    fn handler_backed_results_after_a_block_are_dropped() {
        let out = fold([
            decl(Some(HookResult::block("first"))),
            handler(Some(HookResult::block("second"))),
            decl(Some(HookResult::block("third"))),
        ])
        .unwrap();
        assert_eq!(out.message.unwrap(), "first\n\nthird");
    }

    #[test]
    fn first_rewrite_beats_allow_and_carries_warnings() {
        let mut map = serde_json::Map::new();
        map.insert("command".into(), "ls -la".into());
        let out = fold([
            handler(Some(HookResult::allow())),
            handler(Some(HookResult::rewrite(map, Some("n".into())))),
            decl(Some(HookResult::warn("w"))),
        ])
        .unwrap();
        assert_eq!(out.action, Action::Rewrite);
        assert_eq!(out.note.as_deref(), Some("n\n\nw"));
    }

    #[test]
    fn warnings_join_and_notices_survive_alone() {
        let out = fold([
            decl(Some(HookResult::warn("w1"))),
            decl(Some(HookResult::warn("w2"))),
        ])
        .unwrap();
        assert_eq!(out.message.as_deref(), Some("w1\n\nw2"));
        assert!(!out.approve);
        let notice = fold([handler(Some(
            HookResult::notice_only().with_system_message("hey"),
        ))])
        .unwrap();
        assert!(notice.is_notice_only());
        assert_eq!(fold([decl(None)]), None);
    }
}
