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

    use proptest::prelude::*;
    use proptest::sample::Index;

    use crate::fuzz::config;

    /// Decodes `body` as every message the framing carries; none may panic.
    fn decode_all(body: &[u8]) {
        let _ = decode::<crate::HostRequest>(body);
        let _ = decode::<crate::HostReply>(body);
        let _ = decode::<crate::WorkerFrame>(body);
        let _ = decode::<crate::EventRequest>(body);
    }

    proptest! {
        #![proptest_config(config(4096))]

        /// Short random byte streams, half of them with a plausible length prefix so bodies
        /// get decoded too: reading and decoding never panic.
        #[test]
        fn random_streams_never_panic(
            mut bytes in prop::collection::vec(any::<u8>(), 0..64),
            plausible in any::<bool>(),
        ) {
            if bytes.len() >= 4 && plausible {
                let len = (bytes.len() - 4) as u32;
                bytes[..4].copy_from_slice(&len.to_be_bytes());
            }
            let mut r = &bytes[..];
            while let Ok(Some(body)) = read_frame(&mut r, 1024) {
                decode_all(&body);
            }
        }
    }

    /// Tokens spliced into messages: a lone surrogate escape, JSON punctuation, a number past
    /// `f64`, a byte-order mark.
    const SPLICES: [&[u8]; 8] = [
        b"\\ud800",
        b"\"",
        b"{",
        b"[",
        b"}",
        b"null",
        b"1e999999",
        b"\xef\xbb\xbf",
    ];

    /// One edit of a message; positions are fractions of its length at the time, so an edit
    /// list shrinks to fewer and smaller edits.
    #[derive(Debug, Clone)]
    enum Edit {
        Set(Index, u8),
        Remove(Index),
        Truncate(Index),
        Splice(Index, Index),
        /// Opens this many arrays (or objects): deep nesting must not overflow the stack.
        Nest(Index, usize, bool),
        Duplicate(Index, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
            any::<Index>().prop_map(Edit::Remove),
            any::<Index>().prop_map(Edit::Truncate),
            (any::<Index>(), any::<Index>()).prop_map(|(i, s)| Edit::Splice(i, s)),
            (any::<Index>(), 0usize..5000, any::<bool>()).prop_map(|(i, d, a)| Edit::Nest(i, d, a)),
            (any::<Index>(), 0usize..64).prop_map(|(i, n)| Edit::Duplicate(i, n)),
        ]
    }

    fn apply(mut body: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
        for e in edits {
            // A position between bytes (0..=len), and one on a byte when there is one.
            let between = |i: &Index, len: usize| i.index(len + 1);
            let on = |i: &Index, len: usize| (len > 0).then(|| i.index(len));
            match e {
                Edit::Set(i, b) => {
                    if let Some(k) = on(i, body.len()) {
                        body[k] = *b;
                    }
                }
                Edit::Remove(i) => {
                    if let Some(k) = on(i, body.len()) {
                        body.remove(k);
                    }
                }
                Edit::Truncate(i) => body.truncate(between(i, body.len()).max(1)),
                Edit::Splice(i, s) => {
                    let k = between(i, body.len());
                    body.splice(k..k, s.get(&SPLICES[..]).iter().copied());
                }
                Edit::Nest(i, depth, array) => {
                    let k = between(i, body.len());
                    let open = if *array { b'[' } else { b'{' };
                    body.splice(k..k, std::iter::repeat_n(open, *depth));
                }
                Edit::Duplicate(i, n) => {
                    if let Some(k) = on(i, body.len()) {
                        let dup = body[k..(k + n).min(body.len())].to_vec();
                        body.splice(k..k, dup);
                    }
                }
            }
        }
        body
    }

    /// Valid messages of every shape the framing carries.
    fn messages() -> Vec<Vec<u8>> {
        let req = crate::tests::sample_request();
        vec![
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
        ]
    }

    proptest! {
        #![proptest_config(config(2048))]

        /// Valid messages mutated at the JSON level (bytes flipped, dropped, duplicated,
        /// tokens spliced in, deep nesting), then framed, read and decoded: decoding fails
        /// cleanly or yields a message that re-encodes to itself; nothing panics or overflows
        /// the stack.
        #[test]
        fn mutated_messages_decode_or_fail_cleanly(
            which in any::<Index>(),
            edits in prop::collection::vec(edit(), 1..=6),
        ) {
            let seeds = messages();
            let body = apply(which.get(&seeds).clone(), &edits);
            let mut framed = Vec::new();
            if write_frame(&mut framed, &body).is_err() {
                return Ok(());
            }
            let mut r = &framed[..];
            let Ok(Some(got)) = read_frame(&mut r, crate::MAX_FRAME) else {
                prop_assert!(body.is_empty(), "a framed body must read back");
                return Ok(());
            };
            if let Ok(m) = decode::<crate::HostRequest>(&got) {
                prop_assert_eq!(decode::<crate::HostRequest>(&encode(&m)).unwrap(), m);
            }
            if let Ok(m) = decode::<crate::WorkerFrame>(&got) {
                prop_assert_eq!(decode::<crate::WorkerFrame>(&encode(&m)).unwrap(), m);
            }
            decode_all(&got);
        }
    }

    /// A reader that hands out the stream in the given piece sizes (cycling) and reports
    /// `Interrupted` once before each piece marked so, as pipes and sockets do.
    struct Choppy<'a> {
        data: &'a [u8],
        pieces: &'a [(usize, bool)],
        next: usize,
        interrupted: bool,
    }

    impl Read for Choppy<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let (size, interrupt) = self.pieces[self.next % self.pieces.len()];
            if interrupt && !self.interrupted {
                self.interrupted = true;
                return Err(io::ErrorKind::Interrupted.into());
            }
            self.interrupted = false;
            self.next += 1;
            let n = size.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// A length prefix biased towards the edges: zero, tiny, the cap and just past it, huge.
    fn edge_len() -> impl Strategy<Value = u32> {
        let max = crate::MAX_FRAME as u32;
        prop_oneof![
            1 => Just(0u32),
            1 => 0u32..16,
            1 => Just(max),
            1 => Just(max + 1),
            1 => Just(u32::MAX),
            1 => (60u32 << 20)..((60u32 << 20) + 4096),
            3 => 0u32..20_000,
        ]
    }

    proptest! {
        #![proptest_config(config(1024))]

        /// Framed streams of one to three frames (claimed lengths at the edges, bodies often
        /// shorter than claimed, the stream sometimes cut) read in pieces with interruptions:
        /// no panic, no hang, and memory follows the bytes received: a body is exactly its
        /// announced length and its buffer never much larger, whatever length was claimed.
        #[test]
        fn frame_streams_read_whole_frames_only(
            frames in prop::collection::vec(
                (edge_len(), prop::collection::vec(any::<u8>(), 0..8192)),
                1..=3,
            ),
            cut in proptest::option::weighted(0.2, any::<Index>()),
            pieces in prop::collection::vec((1usize..3000, proptest::bool::weighted(0.06)), 1..16),
        ) {
            let mut stream = Vec::new();
            for (len, bytes) in &frames {
                stream.extend_from_slice(&len.to_be_bytes());
                // Send at most what was claimed, often less (a truncated frame).
                stream.extend(bytes.iter().take(*len as usize));
            }
            if let Some(cut) = cut {
                let at = cut.index(stream.len() + 1);
                stream.truncate(at);
            }
            let mut r = Choppy { data: &stream, pieces: &pieces, next: 0, interrupted: false };
            let mut read = 0;
            while let Ok(Some(body)) = read_frame(&mut r, crate::MAX_FRAME) {
                prop_assert!(!body.is_empty() && body.len() <= stream.len());
                prop_assert!(
                    body.capacity() <= (2 * body.len()).max(64 * 1024),
                    "buffer of {} for a {}-byte body",
                    body.capacity(),
                    body.len()
                );
                decode_all(&body);
                read += 1;
                prop_assert!(read <= frames.len(), "more frames than were written");
            }
        }
    }
}
