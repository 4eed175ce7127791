//! Reading a file an event names, within a size limit. Such a file is whatever the agent made
//! of it: one larger than the limit is refused before it is read, and one that is not a regular
//! file is refused without being opened (a named pipe would block the read forever, a device
//! such as `/dev/zero` never end), each with an error naming the file, its size and the limit.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Larger than the limit (by its size on disk, or by what it held when read).
    #[error(
        "{what} {} is {size} bytes ({}), over the {} limit; it was not read",
        path.display(),
        human(*size),
        human(*limit)
    )]
    TooLarge {
        /// What the file is to the reader ("the edited file", "the artifact").
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its size, at least.
        size: u64,
        /// The limit it exceeds.
        limit: u64,
    },
    /// A directory, a named pipe, a socket or a device.
    #[error("{what} {} is not a regular file; it was not read", path.display())]
    NotAFile {
        /// What the file is to the reader.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// Opening or reading failed (`NotFound` among others).
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What the file is to the reader.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

impl ReadError {
    /// True when the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The bytes of `path`, a regular file of at most `limit` bytes; `what` names the file in the
/// errors ("the edited file").
pub fn read_file(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let io = |source| ReadError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let refuse = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            return Err(ReadError::NotAFile {
                what,
                path: path.to_path_buf(),
            });
        }
        if meta.len() > limit {
            return Err(ReadError::TooLarge {
                what,
                path: path.to_path_buf(),
                size: meta.len(),
                limit,
            });
        }
        Ok(())
    };
    // Before opening: opening a named pipe for reading waits for a writer.
    refuse(&std::fs::metadata(path).map_err(io)?)?;
    let file = File::open(path).map_err(io)?;
    // Again on what was opened, in case the name was pointed elsewhere in between.
    let meta = file.metadata().map_err(io)?;
    refuse(&meta)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte past the limit tells a file that grew since from one that did not.
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(ReadError::TooLarge {
            what,
            path: path.to_path_buf(),
            size: read,
            limit,
        });
    }
    Ok(bytes)
}

/// `n` bytes for a person: `512 bytes`, `3.5 KiB`, `40.0 MiB`, `32 MiB` for a whole number.
fn human(n: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = UNITS[0];
    for next in &UNITS[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_file_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.txt");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_file(&f, 10, "the file").unwrap(), b"0123456789");
        assert_eq!(read_file(&f, 100, "the file").unwrap(), b"0123456789");
    }

    #[test]
    fn refuses_a_file_over_the_limit_naming_it_and_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big.json");
        std::fs::write(&f, vec![b'x'; 3 * 1024 * 1024 + 1]).unwrap();
        let e = read_file(&f, 2 * 1024 * 1024, "the artifact").unwrap_err();
        assert!(
            matches!(e, ReadError::TooLarge { size: 3145729, .. }),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "the artifact {} is 3145729 bytes (3.0 MiB), over the 2 MiB limit; it was not read",
                f.display()
            )
        );
        let e = read_file(&f, 10, "the edited file").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("over the 10 bytes limit; it was not read")
        );
    }

    #[test]
    fn missing_files_and_directories_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_file(&dir.path().join("gone"), 10, "the file").unwrap_err();
        assert!(e.is_not_found(), "{e:?}");
        let e = read_file(dir.path(), 10, "the file").unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { .. }), "{e:?}");
        assert!(!e.is_not_found());
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_or_a_device_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.py");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Opened, this would wait for a writer that never comes.
        let e = read_file(&fifo, 10, "the edited file").unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { .. }), "{e:?}");
        assert!(e.to_string().contains("is not a regular file"), "{e}");
        // Read, this would never end.
        let e = read_file(Path::new("/dev/zero"), 10, "the edited file").unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { .. }), "{e:?}");
    }

    #[test]
    fn sizes_read_as_a_person_would() {
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(3 * 512), "1.5 KiB");
        assert_eq!(human(32 * 1024 * 1024), "32 MiB");
        assert_eq!(human(40 * 1024 * 1024 + 1), "40.0 MiB");
        assert_eq!(human(5 * 1024 * 1024 * 1024), "5 GiB");
    }
}
