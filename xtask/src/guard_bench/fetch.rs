//! The peers' corpora, fetched from the package registries only (CI reaches nothing else): each
//! peer is pinned to the release whose published package still carries its tests, checked
//! against the SHA-256 the registry's index records, and unpacked once into a cache directory
//! a fresh clone reuses.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

/// Where a peer's corpus comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A crate tarball on crates.io.
    Crate {
        name: &'static str,
        version: &'static str,
        /// The tarball's SHA-256, as the crates.io index records it (`cksum`).
        sha256: &'static str,
    },
    /// No registry carries the corpus: the bench says so and measures nothing for the peer.
    Unpublished { why: &'static str },
}

/// A peer whose corpus the bench reads.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// The short name used on the command line and in the output (`dcg`, `longline`, …).
    pub name: &'static str,
    pub source: Source,
}

/// The four peers issue 28 measures against.
pub const PEERS: [Peer; 4] = [
    Peer {
        name: "dcg",
        source: Source::Crate {
            name: "destructive_command_guard",
            version: "0.16.0",
            sha256: "21771ae392d187822517e5c3f6a866734dfa022f1adfb6d39962091b5d0763d0",
        },
    },
    Peer {
        name: "longline",
        // 0.21.3 and later publish `src/` and `rules/` only; 0.21.1 is the newest release whose
        // crate still ships `tests/golden/`.
        source: Source::Crate {
            name: "longline",
            version: "0.21.1",
            sha256: "704911cb6420db259b4158aa5482aa312607bfa028af45854e19237361ace62e",
        },
    },
    Peer {
        name: "dippy",
        source: Source::Unpublished {
            why: "Dippy is not on PyPI under its own name (PyPI's `dippy` is an unrelated 2010 \
                  package) nor on npm or crates.io; its tests live only in its git repository",
        },
    },
    Peer {
        name: "cc-safety-net",
        source: Source::Unpublished {
            why: "cc-safety-net's npm package (2.4.5, the only release the registry serves) ships \
                  its built `dist/` alone, without the test files",
        },
    },
];

/// Where unpacked corpora are kept (see [`crate::workspace::download_cache`]).
pub fn cache_root(target: &Path) -> PathBuf {
    crate::workspace::download_cache(target, "guard-bench")
}

/// The unpacked package of `peer` (its top directory, `<crate>-<version>/`), fetched and
/// checked first unless the cache has it. `None` for a peer no registry carries.
pub fn ensure(peer: &Peer, cache: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Source::Crate {
        name,
        version,
        sha256,
    } = peer.source
    else {
        return Ok(None);
    };
    let dir = cache.join(format!("{}-{version}", peer.name));
    let top = dir.join(format!("{name}-{version}"));
    // The directory is renamed into place only after the digest matched and the unpack
    // finished, so its presence means a whole, checked copy.
    if top.is_dir() {
        return Ok(Some(top));
    }
    let url = format!("https://static.crates.io/crates/{name}/{name}-{version}.crate");
    println!("fetching {name} {version} from crates.io");
    let bytes = download(&url)?;
    verify(&bytes, sha256).with_context(|| url.clone())?;
    std::fs::create_dir_all(cache).with_context(|| format!("creating {}", cache.display()))?;
    let partial = cache.join(format!(".{}-{version}.partial", peer.name));
    let _ = std::fs::remove_dir_all(&partial);
    unpack(&bytes, &partial).with_context(|| format!("unpacking {url}"))?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir)
        .with_context(|| format!("moving {} into place", dir.display()))?;
    if !top.is_dir() {
        bail!("{url} did not hold {name}-{version}/");
    }
    Ok(Some(top))
}

/// The largest package the bench accepts (dcg's is 4.5 MB).
const MAX_BYTES: u64 = 64 << 20;

/// Through `curl`, which trusts the system's certificate store and proxy settings as cargo and
/// npm do here (a TLS stack with its own root list fails behind an intercepting proxy).
fn download(url: &str) -> anyhow::Result<Vec<u8>> {
    let out = std::process::Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--retry",
            "2",
        ])
        .args([
            "--max-time",
            "300",
            "--max-filesize",
            &MAX_BYTES.to_string(),
            url,
        ])
        .output()
        .context("running curl (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "downloading {url} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// Fails unless `bytes` hash to the pinned digest: a registry that served something else must
/// not be measured as the pinned release.
pub fn verify(bytes: &[u8], sha256: &str) -> anyhow::Result<()> {
    let got = hex(&Sha256::digest(bytes));
    if got != sha256 {
        bail!("SHA-256 mismatch: expected {sha256}, got {got}");
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Unpacks a `.tar.gz` into `dest` (the tar crate refuses entries that climb out of it).
fn unpack(bytes: &[u8], dest: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dest)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive.unpack(dest)?;
    Ok(())
}

/// Reads a corpus file as UTF-8, naming it on failure.
pub fn read(path: &Path) -> anyhow::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(text)
}

/// Files under `dir` ending in `.ext`, sorted, recursively.
pub fn files(dir: &Path, ext: &str) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some(ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

pub fn relative(top: &Path, file: &Path) -> String {
    file.strip_prefix(top)
        .unwrap_or(file)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_accepts_the_digest_and_names_a_mismatch() {
        // SHA-256 of the empty input.
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        verify(b"", empty).expect("empty input");
        let err = verify(b"x", empty).expect_err("wrong bytes").to_string();
        assert!(err.contains("mismatch") && err.contains(empty), "{err}");
    }

    #[test]
    fn unpack_then_ensure_reuses_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        // A cached copy is used as it is, without the network.
        let peer = PEERS[1];
        let Source::Crate { name, version, .. } = peer.source else {
            panic!("longline is a crate")
        };
        let top = dir
            .path()
            .join(format!("longline-{version}"))
            .join(format!("{name}-{version}"));
        std::fs::create_dir_all(&top).expect("mkdir");
        assert_eq!(ensure(&peer, dir.path()).expect("cached"), Some(top));
        assert_eq!(ensure(&PEERS[2], dir.path()).expect("unpublished"), None);
    }

    #[test]
    fn unpack_reads_a_tar_gz() {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        let body = b"[[case]]\n";
        let mut header = tar::Header::new_gnu();
        header.set_size(body.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, "pkg-1.0.0/tests/a.toml", &body[..])
            .expect("append");
        let bytes = builder
            .into_inner()
            .and_then(|gz| gz.finish())
            .expect("finish");
        let dir = tempfile::tempdir().expect("tempdir");
        unpack(&bytes, dir.path()).expect("unpack");
        assert_eq!(
            read(&dir.path().join("pkg-1.0.0/tests/a.toml")).expect("read"),
            "[[case]]\n"
        );
    }
}
