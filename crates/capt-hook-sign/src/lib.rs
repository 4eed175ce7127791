//! Signing what captain-hook ships and trusts: a `SHA256SUMS` file (as `sha256sum` writes it)
//! and a minisign signature over it (`SHA256SUMS.minisig`), made with a minisign secret key
//! file. Releases (`cargo xtask release`) and policy packs (`capt-hook policy sign`) are
//! signed this way; `minisign -V`, `minisign-verify` and `install.sh` check the result.
//!
//! The key is always an input: nothing here makes or stores one.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file of digests a signature covers.
pub const SUMS: &str = "SHA256SUMS";
/// The minisign signature of [`SUMS`].
pub const SIGNATURE: &str = "SHA256SUMS.minisig";
/// Where an encrypted secret key's password is read from (the binaries read it; this crate
/// never prompts).
pub const PASSWORD_VAR: &str = "CAPT_HOOK_SIGNING_PASSWORD";

/// Why signing failed; each names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The secret key file cannot be read.
    #[error("{}: cannot read the signing key: {source}", path.display())]
    Read {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a usable minisign secret key (or the password is wrong).
    #[error("{}: not a usable minisign secret key ({message}){hint}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What minisign said.
        message: String,
        /// How to give an encrypted key's password, when none was given.
        hint: &'static str,
    },
    /// Signing itself failed (the key's own public half did not verify the signature).
    #[error("{}: signing failed: {message}", path.display())]
    Sign {
        /// The key file.
        path: PathBuf,
        /// What minisign said.
        message: String,
    },
}

/// A minisign secret key, read from its file.
pub struct SigningKey {
    path: PathBuf,
    secret: minisign::SecretKey,
    public: minisign::PublicKey,
}

impl std::fmt::Debug for SigningKey {
    // Never the key's bytes (minisign's own Debug prints them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("path", &self.path)
            .field("key_id", &self.key_id())
            .finish()
    }
}

impl SigningKey {
    /// Reads the minisign secret key at `path`: unencrypted (`minisign -G -W`), or encrypted
    /// with `password`.
    pub fn from_file(path: &Path, password: Option<String>) -> Result<SigningKey, SignError> {
        let text = std::fs::read_to_string(path).map_err(|source| SignError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let key_box = minisign::SecretKeyBox::from_string(&text).map_err(|e| SignError::Key {
            path: path.to_path_buf(),
            message: e.to_string(),
            hint: "",
        })?;
        let given = password.is_some();
        let secret = match password {
            Some(password) => key_box.into_secret_key(Some(password)),
            None => unencrypted(&text, key_box),
        }
        .map_err(|e| SignError::Key {
            path: path.to_path_buf(),
            message: e.to_string(),
            hint: if given {
                ""
            } else {
                "; an encrypted key needs its password in CAPT_HOOK_SIGNING_PASSWORD"
            },
        })?;
        let public = minisign::PublicKey::from_secret_key(&secret).map_err(|e| SignError::Key {
            path: path.to_path_buf(),
            message: e.to_string(),
            hint: "",
        })?;
        Ok(SigningKey {
            path: path.to_path_buf(),
            secret,
            public,
        })
    }

    /// The key's id as minisign prints it (16 uppercase hex digits).
    pub fn key_id(&self) -> String {
        // minisign stores the id little-endian and prints it as a number.
        self.public
            .keynum()
            .iter()
            .rev()
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    /// The public key as a minisign `.pub` file, for those who verify.
    pub fn public_key_file(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.key_id(),
            self.public.to_base64()
        )
    }

    /// A minisign signature (prehashed, minisign's default) of `data`, as the text of a
    /// `.minisig` file. `trusted_comment` is signed too; it must be one line. The signature
    /// is checked against the key's public half before it is returned.
    pub fn sign(&self, data: &[u8], trusted_comment: &str) -> Result<String, SignError> {
        let trusted = trusted_comment.replace(['\n', '\r'], " ");
        let untrusted = format!("signature from minisign secret key {}", self.key_id());
        minisign::sign(
            Some(&self.public),
            &self.secret,
            data,
            Some(&trusted),
            Some(&untrusted),
        )
        .map(|sig| sig.into_string())
        .map_err(|e| SignError::Sign {
            path: self.path.clone(),
            message: e.to_string(),
        })
    }
}

/// An unencrypted secret key. The `minisign` tool's `-G -W` leaves such a key's checksum zero,
/// which the crate takes for corruption; that one case is read without the checksum, and the
/// signature's own check against the key's public half (see [`SigningKey::sign`]) still
/// catches a damaged key.
fn unencrypted(
    text: &str,
    key_box: minisign::SecretKeyBox,
) -> Result<minisign::SecretKey, minisign::PError> {
    use ct_codecs::{Base64, Decoder as _};
    match key_box.into_unencrypted_secret_key() {
        Ok(key) => Ok(key),
        Err(e) => {
            let bytes = text
                .lines()
                .nth(1)
                .and_then(|line| Base64::decode_to_vec(line.trim(), None).ok());
            // Layout: algorithms (6 bytes), KDF salt and limits (48), key id (8), key (64),
            // checksum (32); the KDF algorithm is bytes 2..4, zero when unencrypted.
            match bytes {
                Some(b)
                    if b.len() == 158 && b[2..4] == [0, 0] && b[126..].iter().all(|&x| x == 0) =>
                {
                    minisign::SecretKey::from_bytes(&b)
                }
                _ => Err(e),
            }
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `SHA256SUMS` file for `files` (name relative to the directory, bytes), one
/// `<digest>  <name>` line each, sorted by name so the same files always give the same text.
pub fn sums<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut lines: Vec<(String, &str)> = files
        .into_iter()
        .map(|(name, bytes)| (sha256_hex(bytes), name))
        .collect();
    lines.sort_by(|a, b| a.1.cmp(b.1));
    lines
        .iter()
        .map(|(digest, name)| format!("{digest}  {name}\n"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendored test key (never trusted for anything but tests).
    fn test_key() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/release-key/test.key")
    }

    #[test]
    fn a_signature_verifies_with_the_public_half_and_not_after_a_change() {
        let key = SigningKey::from_file(&test_key(), None).unwrap();
        let sig = key.sign(b"digests\n", "file:SHA256SUMS").unwrap();
        let public =
            minisign_verify::PublicKey::from_base64(key.public_key_file().lines().nth(1).unwrap())
                .unwrap();
        let vendored = std::fs::read_to_string(test_key().with_extension("pub")).unwrap();
        assert_eq!(
            vendored.lines().nth(1),
            key.public_key_file().lines().nth(1),
            "the vendored public key is the secret key's"
        );
        let signature = minisign_verify::Signature::decode(&sig).unwrap();
        assert_eq!(signature.trusted_comment(), "file:SHA256SUMS");
        public.verify(b"digests\n", &signature, false).unwrap();
        assert!(public.verify(b"digests!\n", &signature, false).is_err());
        assert_eq!(key.key_id().len(), 16);
        assert!(!format!("{key:?}").contains(&format!("{:?}", key.secret)));
    }

    #[test]
    fn bad_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.key");
        let e = SigningKey::from_file(&missing, None).unwrap_err();
        assert!(e.to_string().contains("none.key"), "{e}");
        let junk = dir.path().join("junk.key");
        std::fs::write(&junk, "untrusted comment: x\nnot base64\n").unwrap();
        let e = SigningKey::from_file(&junk, None).unwrap_err();
        assert!(
            e.to_string().starts_with(&junk.display().to_string()),
            "{e}"
        );
        // A public key is not a secret key.
        let e = SigningKey::from_file(&test_key().with_extension("pub"), None).unwrap_err();
        assert!(matches!(e, SignError::Key { .. }), "{e}");
    }

    #[test]
    fn sums_are_sorted_sha256sum_lines() {
        let text = sums([("b.txt", &b"b"[..]), ("a.txt", &b""[..])]);
        assert_eq!(
            text,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a.txt\n\
             3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d  b.txt\n"
        );
    }
}
