//! The edited file's text before and after an Edit, Write or MultiEdit, at PreToolUse (the file
//! on disk, the call applied to it) and PostToolUse (the file on disk, and before it Claude Code's
//! `originalFile` or the edit undone). One owner, so every code hook sees the same text, and one
//! rule for files that are not text: a file that is not UTF-8 (or not readable, or not a regular
//! file) has no images. A file larger than [`MAX_EDITED_FILE`] is not read either, and
//! [`refused`] says so, for the hooks that need its text to fail visibly instead of passing the
//! edit unread.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::capped::{self, ReadError};
use crate::event::Event;
use crate::events::EventKind;
use crate::tool::{EditOp, ToolCall, apply_edit};

/// The largest edited file read for an event: as large as an event's own payload may be
/// ([`capt_hook_proto::MAX_EVENT_INPUT`]), so a Write's content and the file it replaces are
/// bounded alike.
pub const MAX_EDITED_FILE: u64 = capt_hook_proto::MAX_EVENT_INPUT as u64;

/// Where [`compute`] keeps why it read no file, for [`refused`].
const REFUSED: &str = "capt-hook-core.edit.refused";

/// The file before and after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditImages {
    /// The whole file before the call (empty for a new file).
    pub pre: String,
    /// The whole file after it.
    pub post: String,
    /// False when the file was not on disk and the images are the edit's own text (an inline
    /// test, or a file that moved on): line numbers then count from the edit's first line.
    pub whole_file: bool,
}

/// The file's text: `Ok(None)` when it is not there, `Err` when it exists but is not text, or
/// is larger than [`MAX_EDITED_FILE`] (kept on `evt` for [`refused`]).
fn read_text(evt: &Event, path: &str) -> Result<Option<String>, ()> {
    match capped::read_file(Path::new(path), MAX_EDITED_FILE, "the edited file") {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| ()),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e @ ReadError::TooLarge { .. }) => {
            evt.memo(REFUSED, || e);
            Err(())
        }
        Err(_) => Err(()),
    }
}

/// Why `evt`'s edit has no images although it edits a file: the file is larger than
/// [`MAX_EDITED_FILE`] and was not read. `None` when there are images, and for the files that
/// simply have none (not text, not a regular file, not an edit). A hook that needs the text
/// fails with this message rather than letting the edit through unread.
pub fn refused(evt: &Event) -> Option<Arc<ReadError>> {
    if evt.edit_images().is_some() {
        return None;
    }
    evt.memo_peek::<ReadError>(REFUSED)
}

/// Undoes edits on the post-edit text (PostToolUse without `originalFile`).
fn undo(post: &str, edits: &[EditOp]) -> Option<String> {
    let mut text = post.to_owned();
    for op in edits.iter().rev() {
        if op.new_string.is_empty() {
            return None;
        }
        let at = text.find(op.new_string.as_str())?;
        text.replace_range(at..at + op.new_string.len(), &op.old_string);
    }
    Some(text)
}

/// Why an edit cannot be applied to the text given as the file before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// An Edit whose `old_string` the text does not hold.
    #[error("the edit's `old_string` is not in the given text")]
    EditMissing,
    /// A MultiEdit one of whose `old_string`s is missing when its turn comes.
    #[error("an edit's `old_string` is not in the given text")]
    MultiEditMissing,
    /// A call that edits no file.
    #[error("only an Edit, MultiEdit or Write has a file before it")]
    NotAnEdit,
}

/// The images of `evt`'s edit applied to `pre`, the file's text as the caller knows it.
pub(crate) fn from_before(evt: &Event, pre: String) -> Result<EditImages, EditError> {
    let post = match evt.tool() {
        ToolCall::Write { content, .. } => content.clone(),
        ToolCall::Edit {
            old_string,
            new_string,
            replace_all,
            ..
        } => apply_edit(
            &pre,
            &EditOp {
                old_string: old_string.clone(),
                new_string: new_string.clone(),
                replace_all: *replace_all,
            },
        )
        .ok_or(EditError::EditMissing)?,
        ToolCall::MultiEdit { edits, .. } => edits
            .iter()
            .try_fold(pre.clone(), |text, op| apply_edit(&text, op))
            .ok_or(EditError::MultiEditMissing)?,
        _ => return Err(EditError::NotAnEdit),
    };
    Ok(EditImages {
        pre,
        post,
        whole_file: true,
    })
}

/// Computes the images of `evt`'s edit; `None` for other calls and files that are not text.
pub(crate) fn compute(evt: &Event) -> Option<EditImages> {
    let (file, edits, write) = match evt.tool() {
        ToolCall::Write { file_path, content } => (file_path, Vec::new(), Some(content)),
        ToolCall::Edit {
            file_path,
            old_string,
            new_string,
            replace_all,
        } => (
            file_path,
            vec![EditOp {
                old_string: old_string.clone(),
                new_string: new_string.clone(),
                replace_all: *replace_all,
            }],
            None,
        ),
        ToolCall::MultiEdit { file_path, edits } => (file_path, edits.clone(), None),
        _ => return None,
    };
    let on_disk = read_text(evt, file).ok()?;
    match evt.kind() {
        EventKind::PreToolUse => {
            let pre = on_disk.unwrap_or_default();
            let post = match write {
                Some(content) => content.clone(),
                None => edits
                    .iter()
                    .try_fold(pre.clone(), |text, op| apply_edit(&text, op))?,
            };
            Some(EditImages {
                pre,
                post,
                whole_file: true,
            })
        }
        _ => {
            let Some(post) = on_disk else {
                let post = evt.content()?;
                let pre = if write.is_some() {
                    String::new()
                } else {
                    evt.old().unwrap_or_default()
                };
                return Some(EditImages {
                    pre,
                    post,
                    whole_file: false,
                });
            };
            let original = evt.tool_response().and_then(|r| r.get("originalFile"));
            let pre = match original {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) => String::new(),
                _ if write.is_some() => String::new(),
                _ if edits.iter().all(|op| op.old_string.is_empty()) => String::new(),
                _ => undo(&post, &edits)?,
            };
            Some(EditImages {
                pre,
                post,
                whole_file: true,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::event::{Event, EventContext};
    use crate::events::EventKind;

    fn edit(kind: EventKind, file: &std::path::Path, extra: serde_json::Value) -> Event {
        let mut p = json!({"tool_name": "Edit", "tool_input": {"file_path": file, "old_string": "b = 1", "new_string": "b = 2"}});
        if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        Event::new(kind, p, EventContext::default()).unwrap()
    }

    #[test]
    fn pre_and_post_tool_use_agree() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "a = 0\nb = 1\n").unwrap();
        let pre = edit(EventKind::PreToolUse, &f, json!({}));
        let before = pre.edit_images().unwrap().clone();
        assert_eq!(before.post, "a = 0\nb = 2\n");
        std::fs::write(&f, &before.post).unwrap();
        // PostToolUse without originalFile: the edit undone on the file on disk.
        let post = edit(EventKind::PostToolUse, &f, json!({}));
        assert_eq!(post.edit_images(), Some(&before));
        let told = edit(
            EventKind::PostToolUse,
            &f,
            json!({"tool_response": {"originalFile": "a = 0\nb = 1\n"}}),
        );
        assert_eq!(told.edit_images(), Some(&before));
    }

    #[test]
    fn files_that_are_not_text_have_no_images() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.bin");
        std::fs::write(&f, [0xff, 0xfe, b'b', b' ', b'=', b' ', b'1']).unwrap();
        assert_eq!(
            edit(EventKind::PreToolUse, &f, json!({})).edit_images(),
            None
        );
        assert_eq!(
            edit(EventKind::PostToolUse, &f, json!({})).edit_images(),
            None
        );
        let gone = dir.path().join("gone.py");
        let e = edit(EventKind::PostToolUse, &gone, json!({}));
        let images = e.edit_images().unwrap();
        assert!(!images.whole_file);
        assert_eq!(
            (images.pre.as_str(), images.post.as_str()),
            ("b = 1", "b = 2")
        );
    }

    #[test]
    fn a_file_over_the_limit_is_not_read_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("huge.py");
        // Sparse: as large as it says, without writing 32 MiB.
        let file = std::fs::File::create(&f).unwrap();
        file.set_len(super::MAX_EDITED_FILE + 1).unwrap();
        for kind in [EventKind::PreToolUse, EventKind::PostToolUse] {
            let e = edit(kind, &f, json!({}));
            assert_eq!(e.edit_images(), None);
            let why = super::refused(&e).expect("a reason").to_string();
            assert_eq!(
                why,
                format!(
                    "the edited file {} is 33554433 bytes (32.0 MiB), over the 32 MiB limit; \
                     it was not read",
                    f.display()
                )
            );
        }
        // At the limit it is read: no refusal (and, holding `b = 1` nowhere, no images).
        file.set_len(super::MAX_EDITED_FILE).unwrap();
        let e = edit(EventKind::PreToolUse, &f, json!({}));
        assert_eq!(e.edit_images(), None);
        assert!(super::refused(&e).is_none());
    }

    #[test]
    fn files_with_images_or_none_to_have_are_not_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "b = 1\n").unwrap();
        let e = edit(EventKind::PreToolUse, &f, json!({}));
        assert!(e.edit_images().is_some());
        assert!(super::refused(&e).is_none());
        let bin = dir.path().join("a.bin");
        std::fs::write(&bin, [0xff, 0xfe]).unwrap();
        assert!(super::refused(&edit(EventKind::PreToolUse, &bin, json!({}))).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_has_no_images_and_is_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.py");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for kind in [EventKind::PreToolUse, EventKind::PostToolUse] {
            let e = edit(kind, &fifo, json!({}));
            assert_eq!(e.edit_images(), None);
            assert!(super::refused(&e).is_none());
        }
    }
}
