//! Whether a shipped binary is position-independent, so the system loads its code at a random
//! address (ASLR): the host and the worker read what an agent sends them, and `dist` refuses to
//! ship any binary that is not (`readelf -h` would say `Type: EXEC` instead of `DYN`).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// What an executable's header says about where its code is loaded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Anywhere: an ELF `ET_DYN` executable (PIE or static-pie), a Mach-O with `MH_PIE`.
    Randomised,
    /// At the addresses it was linked for: ELF `ET_EXEC`, a Mach-O without `MH_PIE`.
    Fixed(&'static str),
    /// Not an executable this check knows.
    Unknown(String),
}

/// Reads [`Placement`] from the first bytes of an executable.
pub(crate) fn placement(header: &[u8]) -> Placement {
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    const MH_MAGIC_64: u32 = 0xfeed_facf;
    const MH_EXECUTE: u32 = 2;
    const MH_PIE: u32 = 0x0020_0000;
    let u16_at = |at: usize, big: bool| {
        let b: [u8; 2] = header.get(at..at + 2)?.try_into().ok()?;
        Some(if big {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_le = |at: usize| {
        let b: [u8; 4] = header.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(b))
    };
    if header.starts_with(b"\x7fELF") {
        // EI_DATA: 1 little-endian, 2 big-endian; e_type follows the 16-byte identification.
        let big = header.get(5) == Some(&2);
        return match u16_at(16, big) {
            Some(ET_DYN) => Placement::Randomised,
            Some(ET_EXEC) => Placement::Fixed("ELF type EXEC, linked without -pie"),
            Some(other) => Placement::Unknown(format!("ELF type {other}")),
            None => Placement::Unknown("a truncated ELF header".into()),
        };
    }
    if u32_le(0) == Some(MH_MAGIC_64) {
        return match (u32_le(12), u32_le(24)) {
            (Some(MH_EXECUTE), Some(flags)) if flags & MH_PIE != 0 => Placement::Randomised,
            (Some(MH_EXECUTE), Some(_)) => Placement::Fixed("Mach-O executable without MH_PIE"),
            (Some(kind), _) => Placement::Unknown(format!("Mach-O file type {kind}")),
            _ => Placement::Unknown("a truncated Mach-O header".into()),
        };
    }
    Placement::Unknown("neither ELF nor 64-bit Mach-O".into())
}

/// The placement of the executable at `path`.
fn placement_of(path: &Path) -> anyhow::Result<Placement> {
    let mut header = Vec::with_capacity(64);
    std::fs::File::open(path)
        .and_then(|f| f.take(64).read_to_end(&mut header))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(placement(&header))
}

/// Fails, naming each one, unless every binary in `bins` is position-independent; prints the
/// verdict otherwise.
pub(crate) fn check(bins: &[PathBuf]) -> anyhow::Result<()> {
    let mut wrong = Vec::new();
    for bin in bins {
        match placement_of(bin)? {
            Placement::Randomised => {}
            Placement::Fixed(why) => wrong.push(format!("{} ({why})", bin.display())),
            Placement::Unknown(what) => wrong.push(format!("{} ({what})", bin.display())),
        }
    }
    if !wrong.is_empty() {
        bail!(
            "not position-independent, so their code would not be address-randomised: {}",
            wrong.join(", ")
        );
    }
    println!(
        "all {} binaries are position-independent (ASLR)",
        bins.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF header's first 18 bytes: identification, then `e_type`.
    fn elf(big_endian: bool, e_type: u16) -> Vec<u8> {
        let mut h = b"\x7fELF\x02".to_vec();
        h.push(if big_endian { 2 } else { 1 });
        h.resize(16, 0);
        h.extend(if big_endian {
            e_type.to_be_bytes()
        } else {
            e_type.to_le_bytes()
        });
        h
    }

    /// A 64-bit Mach-O header: magic, cpu type and subtype, file type, counts, flags.
    fn mach_o(file_type: u32, flags: u32) -> Vec<u8> {
        [0xfeed_facf, 0x0100_0007, 3, file_type, 0, 0, flags, 0]
            .iter()
            .flat_map(|w: &u32| w.to_le_bytes())
            .collect()
    }

    #[test]
    fn headers_say_where_the_code_goes() {
        assert_eq!(placement(&elf(false, 3)), Placement::Randomised);
        assert_eq!(placement(&elf(true, 3)), Placement::Randomised);
        assert!(matches!(placement(&elf(false, 2)), Placement::Fixed(_)));
        assert!(matches!(placement(&elf(true, 2)), Placement::Fixed(_)));
        assert!(matches!(placement(&elf(false, 1)), Placement::Unknown(_)));
        assert!(matches!(
            placement(&elf(false, 3)[..17]),
            Placement::Unknown(_)
        ));
        assert_eq!(placement(&mach_o(2, 0x0020_0085)), Placement::Randomised);
        assert!(matches!(placement(&mach_o(2, 0x85)), Placement::Fixed(_)));
        assert!(matches!(
            placement(&mach_o(6, 0x0020_0000)),
            Placement::Unknown(_)
        ));
        assert!(matches!(placement(b"#!/bin/sh\n"), Placement::Unknown(_)));
        assert!(matches!(placement(b""), Placement::Unknown(_)));
    }

    /// This test's own executable: cargo links it as rustc does by default, position-independent
    /// on Linux and macOS, so the reader is checked on a real file too.
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn a_real_executable_reads_as_position_independent() {
        let exe = std::env::current_exe().unwrap();
        assert_eq!(placement_of(&exe).unwrap(), Placement::Randomised);
        check(&[exe]).unwrap();
    }

    #[test]
    fn check_names_every_binary_that_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let fixed = dir.path().join("capt-hookd");
        let script = dir.path().join("hook");
        std::fs::write(&fixed, elf(false, 2)).unwrap();
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let e = check(&[fixed.clone(), script.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} (ELF type EXEC", fixed.display()))
                && e.contains(&script.display().to_string()),
            "{e}"
        );
        let pie = dir.path().join("capt-hook-worker");
        std::fs::write(&pie, elf(false, 3)).unwrap();
        check(&[pie]).unwrap();
    }
}
