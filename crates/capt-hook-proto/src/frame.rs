//! Length-prefixed frames: a 4-byte big-endian body length, then the body (one JSON value).

use std::io::{self, Read, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a frame could not be read or decoded.
#[derive(Debug)]
#[non_exhaustive]
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
    let mut buf = Vec::new();
    push_frame(&mut buf, body)?;
    w.write_all(&buf)?;
    w.flush()
}

/// Appends one frame (length prefix, then body) to `out`: what every writer of frames sends,
/// one frame or several gathered into one write.
pub fn push_frame(out: &mut Vec<u8>, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame body over 4 GiB"))?;
    out.reserve(4 + body.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    Ok(())
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

    /// How long each fuzz target runs: bounded so CI stays fast, long enough for ~10^5 inputs.
    const FUZZ_TIME: std::time::Duration = std::time::Duration::from_secs(2);

    /// A reader that hands out the stream in random short pieces and sometimes reports
    /// `Interrupted`, as pipes and sockets do.
    struct Choppy<'a> {
        data: &'a [u8],
        rng: Rng,
    }

    impl Read for Choppy<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.rng.next().is_multiple_of(17) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = (1 + (self.rng.next() % 3000) as usize)
                .min(buf.len())
                .min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// A length prefix biased towards the edges: zero, tiny, the cap and just past it, huge.
    fn edge_len(rng: &mut Rng, max: usize) -> u32 {
        match rng.next() % 8 {
            0 => 0,
            1 => (rng.next() % 16) as u32,
            2 => max as u32,
            3 => max as u32 + 1,
            4 => u32::MAX,
            5 => (60u32 << 20) + (rng.next() % 4096) as u32,
            _ => (rng.next() % 20_000) as u32,
        }
    }

    /// Fuzz: random framed streams through the blocking reader. No panic, no hang (every read
    /// ends within the time box), and memory follows the bytes received: a body is exactly its
    /// announced length and its buffer never much larger, whatever length was claimed.
    #[test]
    fn fuzz_frame_streams() {
        let started = std::time::Instant::now();
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut inputs = 0u64;
        let max = crate::MAX_FRAME;
        while started.elapsed() < FUZZ_TIME {
            inputs += 1;
            let mut stream = Vec::new();
            for _ in 0..(1 + rng.next() % 3) {
                let len = edge_len(&mut rng, max);
                stream.extend_from_slice(&len.to_be_bytes());
                // Send at most what was claimed, often less (a truncated frame).
                let send = (len as usize).min((rng.next() % 8192) as usize);
                stream.extend((0..send).map(|_| rng.next() as u8));
            }
            if rng.next().is_multiple_of(5) {
                let cut = (rng.next() as usize) % (stream.len() + 1);
                stream.truncate(cut);
            }
            let mut r = Choppy {
                data: &stream,
                rng: Rng(rng.next() | 1),
            };
            let mut frames = 0;
            while let Ok(Some(body)) = read_frame(&mut r, max) {
                assert!(!body.is_empty() && body.len() <= stream.len());
                assert!(
                    body.capacity() <= (2 * body.len()).max(64 * 1024),
                    "buffer of {} for a {}-byte body",
                    body.capacity(),
                    body.len()
                );
                let _ = decode::<crate::HostRequest>(&body);
                let _ = decode::<crate::WorkerFrame>(&body);
                frames += 1;
                assert!(frames <= 3, "more frames than were written");
            }
        }
        eprintln!(
            "fuzz_frame_streams: {inputs} inputs in {:?}",
            started.elapsed()
        );
        assert!(inputs > 100, "the fuzz loop barely ran");
    }

    /// Fuzz: valid messages of every shape, mutated at the JSON level (bytes flipped, dropped,
    /// duplicated, tokens spliced in, deep nesting), then framed, read and decoded. Decoding
    /// must fail cleanly or yield a message that re-encodes; nothing panics or overflows the
    /// stack.
    #[test]
    fn fuzz_decode_mutated_messages() {
        let started = std::time::Instant::now();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let req = crate::tests::sample_request();
        let seeds: Vec<Vec<u8>> = vec![
            encode(&crate::HostRequest::event(7, req.clone())),
            encode(&crate::HostRequest::new(7, crate::Op::Status)),
            encode(&crate::WorkerFrame::Event {
                id: 3,
                request: req,
            }),
            encode(&crate::WorkerFrame::Hello {
                protocol: 1,
                build: "x".into(),
            }),
            encode(&crate::HostReply::Refused {
                code: crate::Refusal::Busy,
                reason: "r".into(),
            }),
        ];
        let splices: [&[u8]; 8] = [
            b"\\ud800",
            b"\"",
            b"{",
            b"[",
            b"}",
            b"null",
            b"1e999999",
            b"\xef\xbb\xbf",
        ];
        let mut inputs = 0u64;
        while started.elapsed() < FUZZ_TIME {
            inputs += 1;
            let mut body = seeds[(rng.next() as usize) % seeds.len()].clone();
            for _ in 0..(1 + rng.next() % 6) {
                let i = (rng.next() as usize) % (body.len() + 1);
                match rng.next() % 6 {
                    0 if i < body.len() => body[i] = rng.next() as u8,
                    1 if i < body.len() => {
                        body.remove(i);
                    }
                    2 => {
                        let s = splices[(rng.next() as usize) % splices.len()];
                        body.splice(i..i, s.iter().copied());
                    }
                    3 => {
                        let depth = (rng.next() % 5000) as usize;
                        let open = if rng.next().is_multiple_of(2) {
                            b'['
                        } else {
                            b'{'
                        };
                        body.splice(i..i, std::iter::repeat_n(open, depth));
                    }
                    4 if i < body.len() => {
                        let end = (i + (rng.next() % 64) as usize).min(body.len());
                        let dup: Vec<u8> = body[i..end].to_vec();
                        body.splice(i..i, dup);
                    }
                    _ => body.truncate(i.max(1)),
                }
            }
            let mut framed = Vec::new();
            if write_frame(&mut framed, &body).is_err() {
                continue;
            }
            let mut r = &framed[..];
            let got = read_frame(&mut r, crate::MAX_FRAME);
            let Ok(Some(got)) = got else {
                assert!(body.is_empty(), "a framed body must read back");
                continue;
            };
            if let Ok(m) = decode::<crate::HostRequest>(&got) {
                assert_eq!(decode::<crate::HostRequest>(&encode(&m)).unwrap(), m);
            }
            if let Ok(m) = decode::<crate::WorkerFrame>(&got) {
                assert_eq!(decode::<crate::WorkerFrame>(&encode(&m)).unwrap(), m);
            }
            let _ = decode::<crate::HostReply>(&got);
            let _ = decode::<crate::EventRequest>(&got);
        }
        eprintln!(
            "fuzz_decode_mutated_messages: {inputs} inputs in {:?}",
            started.elapsed()
        );
        assert!(inputs > 100, "the fuzz loop barely ran");
    }
}
