//! Length-prefixed frames: a 4-byte big-endian body length, then the body (one JSON value).

use std::io::{self, Read, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a frame could not be read or decoded.
#[derive(Debug)]
pub enum FrameError {
    /// The underlying stream failed (includes a stream that ended inside a frame).
    Io(io::Error),
    /// A zero-length frame: never valid, since every message is a JSON object.
    Empty,
    /// The announced length is over the reader's cap.
    TooLarge {
        /// The length the peer announced.
        len: usize,
        /// The cap in force.
        max: usize,
    },
    /// The body is not the expected message (bad JSON, unknown field, trailing bytes).
    Decode(serde_json::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "frame i/o: {e}"),
            FrameError::Empty => f.write_str("empty frame"),
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the {max}-byte cap")
            }
            FrameError::Decode(e) => write!(f, "undecodable frame: {e}"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io(e) => Some(e),
            FrameError::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Serializes a message to a frame body (compact JSON).
pub fn encode<T: Serialize>(msg: &T) -> Vec<u8> {
    // Our message types hold only strings, numbers, maps with string keys and enums: serializing
    // them cannot fail, so an error here would be a bug in this crate's types.
    serde_json::to_vec(msg)
        .unwrap_or_else(|e| format!("{{\"encode_error\":{:?}}}", e.to_string()).into_bytes())
}

/// Decodes a frame body; trailing bytes after the JSON value are an error.
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(body).map_err(FrameError::Decode)
}

/// Writes one frame (length prefix and body) in a single `write_all`, so concurrent writers that
/// share a lock never interleave partial frames.
pub fn write_frame<W: Write>(w: &mut W, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame body over 4 GiB"))?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()
}

/// The body length a 4-byte big-endian header announces, checked against `max` (and zero, which
/// no sender writes). Shared by this blocking reader and the host's async one.
pub fn frame_len(header: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len)
}

/// Reads one frame body of at most `max` bytes. `Ok(None)` is a clean end of stream before the
/// first length byte; a stream that ends anywhere else is an error.
///
/// The body buffer grows with the bytes actually received, never with the announced length, so
/// a peer that announces a large frame and sends little cannot make the reader allocate it.
pub fn read_frame<R: Read>(r: &mut R, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len_buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len_buf[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let len = frame_len(len_buf, max)?;
    let mut body = Vec::with_capacity(len.min(64 * 1024));
    r.take(len as u64).read_to_end(&mut body)?;
    if body.len() < len {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        write_frame(&mut v, body).unwrap();
        v
    }

    #[test]
    fn round_trip() {
        let bytes = frame(b"{\"a\":1}");
        assert_eq!(&bytes[..4], &[0, 0, 0, 7]);
        let mut r = &bytes[..];
        assert_eq!(read_frame(&mut r, 100).unwrap().unwrap(), b"{\"a\":1}");
        assert!(read_frame(&mut r, 100).unwrap().is_none());
    }

    #[test]
    fn zero_length_is_an_error() {
        let mut r = &[0u8, 0, 0, 0][..];
        assert!(matches!(read_frame(&mut r, 100), Err(FrameError::Empty)));
    }

    #[test]
    fn over_cap_is_refused_before_reading_the_body() {
        let mut r = &[0xffu8, 0xff, 0xff, 0xff][..];
        assert!(matches!(
            read_frame(&mut r, 1 << 20),
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[test]
    fn truncated_length_and_body_are_errors() {
        let mut r = &[0u8, 0][..];
        assert!(matches!(read_frame(&mut r, 100), Err(FrameError::Io(_))));
        let mut r = &[0u8, 0, 0, 9, b'{'][..];
        assert!(matches!(read_frame(&mut r, 100), Err(FrameError::Io(_))));
    }

    #[test]
    fn large_claim_with_little_data_allocates_little() {
        // Claims 60 MiB, sends 3 bytes: the read fails without reserving the claimed size.
        let mut bytes = (60u32 << 20).to_be_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let mut r = &bytes[..];
        assert!(read_frame(&mut r, crate::MAX_FRAME).is_err());
    }

    /// A small xorshift generator, so the property tests need no extra dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn random_streams_never_panic() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let n = (rng.next() % 64) as usize;
            let mut bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            // Half the time, make the length prefix plausible so bodies get decoded too.
            if n >= 4 && rng.next().is_multiple_of(2) {
                let len = (n - 4) as u32;
                bytes[..4].copy_from_slice(&len.to_be_bytes());
            }
            let mut r = &bytes[..];
            while let Ok(Some(body)) = read_frame(&mut r, 1024) {
                let _ = decode::<crate::HostRequest>(&body);
                let _ = decode::<crate::HostReply>(&body);
                let _ = decode::<crate::WorkerFrame>(&body);
                let _ = decode::<crate::EventRequest>(&body);
            }
        }
    }

    #[test]
    fn mutated_valid_frames_never_panic() {
        let req = crate::tests::sample_request();
        let good = encode(&crate::HostRequest::event(7, req));
        let mut rng = Rng(42);
        for _ in 0..20_000 {
            let mut body = good.clone();
            for _ in 0..(1 + rng.next() % 4) {
                if body.is_empty() {
                    break;
                }
                let i = (rng.next() as usize) % body.len();
                match rng.next() % 3 {
                    0 => body[i] = rng.next() as u8,
                    1 => {
                        body.remove(i);
                    }
                    _ => body.truncate(i.max(1)),
                }
            }
            let _ = decode::<crate::HostRequest>(&body);
            let _ = decode::<crate::WorkerFrame>(&body);
        }
    }
}
