//! Opening the host's own files (log, lock, worker records) without following a symlink or
//! blocking on a FIFO someone put in their place: the host writes only to files it created.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`: a symlink fails to open (ELOOP) and a FIFO does not
/// block the open; the regular-file check below then refuses anything else.
fn guard_flags() -> i32 {
    use rustix::fs::OFlags;
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32
}

/// Opens `path` with `options` (plus the guard flags) and checks that it is a regular file
/// owned by us with one link; otherwise an error naming what it found.
pub fn open_own(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options.custom_flags(guard_flags()).open(path)?;
    let meta = file.metadata()?;
    let uid = rustix::process::geteuid().as_raw();
    if !meta.file_type().is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if meta.uid() != uid || meta.nlink() > 1 {
        return Err(io::Error::other(format!(
            "{} is owned by another user or hard-linked elsewhere",
            path.display()
        )));
    }
    // Regular files ignore O_NONBLOCK, but clear it so nothing depends on that.
    let flags = rustix::fs::fcntl_getfl(&file).map_err(io::Error::from)?;
    rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)
        .map_err(io::Error::from)?;
    Ok(file)
}

/// Opens (creating, 0600) a private file for appending. When something other than our own
/// regular file sits at `path` (a symlink, a FIFO, another user's file), it is renamed aside
/// (the rename moves the link itself, never its target) and a fresh file is created; the
/// returned path names what was moved, so the caller can log it.
pub fn open_append(path: &Path) -> io::Result<(File, Option<PathBuf>)> {
    let mut options = OpenOptions::new();
    options.create(true).append(true).mode(0o600);
    match open_own(path, &mut options) {
        Ok(f) => Ok((f, None)),
        Err(first) if first.kind() == io::ErrorKind::NotFound => Err(first),
        Err(_) => {
            let aside = move_aside(path)?;
            let mut fresh = OpenOptions::new();
            fresh.create_new(true).append(true).mode(0o600);
            Ok((open_own(path, &mut fresh)?, Some(aside)))
        }
    }
}

/// Renames `path` to `<path>.moved-<unix seconds>[.N]`.
pub fn move_aside(path: &Path) -> io::Result<PathBuf> {
    let secs = crate::now_unix_ms() / 1000;
    let base = format!("{}.moved-{secs}", path.display());
    let mut aside = PathBuf::from(&base);
    let mut n = 1;
    while aside.symlink_metadata().is_ok() {
        aside = PathBuf::from(format!("{base}.{n}"));
        n += 1;
    }
    std::fs::rename(path, &aside)?;
    Ok(aside)
}

/// Writes `bytes` to `path` by way of a fresh temp file renamed into place: the rename replaces
/// whatever entry was there (a symlink included) without writing through it.
pub fn write_replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    match std::fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).mode(0o600);
    let mut f = open_own(&tmp, &mut options)?;
    f.write_all(bytes)?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// Reads `path` if it is our own regular file (not through a symlink).
pub fn read_own(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = open_own(path, OpenOptions::new().read(true))?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_log_is_moved_aside_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.txt");
        std::fs::write(&target, "keep").unwrap();
        let log = dir.path().join("capt-hookd.log");
        std::os::unix::fs::symlink(&target, &log).unwrap();
        let (mut f, moved) = open_append(&log).unwrap();
        std::io::Write::write_all(&mut f, b"line\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "line\n");
        let moved = moved.unwrap();
        assert!(moved.symlink_metadata().unwrap().file_type().is_symlink());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(log.metadata().unwrap().permissions().mode() & 0o777, 0o600);
        // Our own file is appended to in place.
        let (mut again, moved) = open_append(&log).unwrap();
        std::io::Write::write_all(&mut again, b"two\n").unwrap();
        assert!(moved.is_none());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "line\ntwo\n");
    }

    #[test]
    fn a_fifo_does_not_block_and_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("x.log");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &log,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (_f, moved) = open_append(&log).unwrap();
        assert!(moved.is_some());
        assert!(log.metadata().unwrap().file_type().is_file());
    }

    #[test]
    fn records_replace_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        let rec = dir.path().join("workers.json");
        std::os::unix::fs::symlink(&target, &rec).unwrap();
        assert!(read_own(&rec).is_err());
        // A planted temp-file symlink is not followed either.
        std::os::unix::fs::symlink(&target, dir.path().join("workers.json.tmp")).unwrap();
        write_replace(&rec, b"[]").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(read_own(&rec).unwrap(), b"[]");
    }
}
