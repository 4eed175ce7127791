//! Errors of the transcript crate. Reading never fails on bad content (bad lines are skipped);
//! only the file itself can be missing or unreadable.

use std::path::PathBuf;

/// A transcript that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// No file at the path (a session whose transcript was swept, or a wrong path).
    #[error(
        "transcript {path} does not exist; conditions that read the transcript see an empty session"
    )]
    NotFound {
        /// The path from the payload.
        path: PathBuf,
    },
    /// The file exists but reading it failed.
    #[error("cannot read transcript {path}: {source}; check the file's permissions")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying failure.
        source: std::io::Error,
    },
    /// A line re-read for its full content is no longer what was parsed (the file was replaced).
    #[error(
        "line at byte {offset} of transcript {path} changed since it was parsed; load the \
         transcript again"
    )]
    Changed {
        /// The file (or `<memory>`).
        path: PathBuf,
        /// Where the line was.
        offset: u64,
    },
}

impl TranscriptError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> TranscriptError {
        if source.kind() == std::io::ErrorKind::NotFound {
            TranscriptError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            TranscriptError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    }
}
