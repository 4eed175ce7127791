//! Async counterparts of `capt_hook_proto::{read_frame, write_frame}` for tokio streams, and the
//! memory budget for client requests in flight.
//!
//! A client request is read in chunks: the buffer grows only with bytes actually received, and
//! every growth is taken from a host-wide [`Budget`] first, so any number of clients holding
//! partial large frames cannot make the host allocate more than the budget. A client that stops
//! sending for the stall period is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use capt_hook_proto::FrameError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The smallest step the request buffer grows by.
const CHUNK: usize = 64 * 1024;
/// Bytes asked for by a request's first read: a typical event's whole frame.
const FIRST_READ: usize = 2048;

/// Request frames at most this long are "small": they may use the budget's reserve, so ordinary
/// events get through while large frames fill the rest.
pub const SMALL_FRAME: usize = 1024 * 1024;

/// Bytes of client request frames the host holds at once, across connections.
#[derive(Debug)]
pub struct Budget {
    /// The total, for small frames.
    limit: usize,
    /// What large frames may use together: the total minus the reserve kept for small frames.
    large_limit: usize,
    /// Bytes held now.
    used: AtomicUsize,
}

impl Budget {
    /// A budget of `limit` bytes, of which `reserve` only small frames may use.
    pub fn new(limit: usize, reserve: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            large_limit: limit.saturating_sub(reserve),
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// Takes `n` bytes if that keeps the total under the frame's ceiling.
    fn take(&self, n: usize, large: bool) -> bool {
        let ceiling = if large { self.large_limit } else { self.limit };
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|total| *total <= ceiling)
            })
            .is_ok()
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::SeqCst);
    }
}

/// The bytes one connection holds against the budget; given back when dropped, which is when
/// the connection's request and reply are done with.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Held {
    /// Nothing held yet.
    pub fn new(budget: Arc<Budget>) -> Held {
        Held { budget, bytes: 0 }
    }

    fn grow(&mut self, n: usize, large: bool) -> bool {
        let ok = self.budget.take(n, large);
        if ok {
            self.bytes += n;
        }
        ok
    }

    /// Counts bytes the allocator handed out beyond what was asked (never refused: they exist).
    fn force(&mut self, n: usize) {
        self.budget.used.fetch_add(n, Ordering::SeqCst);
        self.bytes += n;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// Why a client request could not be read.
#[derive(Debug)]
pub enum RequestError {
    /// Bad framing or a failed stream.
    Frame(FrameError),
    /// Receiving the frame would take the host over its frame memory budget.
    OverBudget {
        /// The frame's announced length.
        len: usize,
    },
    /// The client sent nothing for the stall period.
    Stalled(Duration),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Frame(e) => e.fmt(f),
            RequestError::OverBudget { len } => write!(
                f,
                "a {len}-byte request does not fit in the host's memory for requests in flight"
            ),
            RequestError::Stalled(d) => write!(f, "the client sent nothing for {d:?}"),
        }
    }
}

impl From<std::io::Error> for RequestError {
    fn from(e: std::io::Error) -> Self {
        RequestError::Frame(FrameError::Io(e))
    }
}

/// Reads one client request frame of at most `max` bytes, growing the buffer in chunks taken
/// from `held`'s budget, and giving up when a read waits longer than `stall`. `first_byte`
/// runs once the first byte has arrived (the connection is no longer idle). `Ok(None)` is a
/// clean end of stream before any byte.
pub async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
    max: usize,
    held: &mut Held,
    stall: Duration,
    first_byte: impl FnOnce(),
) -> Result<Option<Vec<u8>>, RequestError> {
    // The first read takes the header and, for a typical event, the whole body: one system
    // call instead of three. Only these few bytes are held before the length is checked.
    let mut first = [0u8; FIRST_READ];
    let mut got = read_some(r, &mut first, stall).await?;
    if got == 0 {
        return Ok(None);
    }
    first_byte();
    while got < 4 {
        match read_some(r, &mut first[got..], stall).await? {
            0 => return Err(eof()),
            n => got += n,
        }
    }
    let header = [first[0], first[1], first[2], first[3]];
    let len = capt_hook_proto::frame_len(header, max).map_err(RequestError::Frame)?;
    // A client sends one frame and waits for the answer: bytes past it are ignored, as they
    // were when they stayed unread in the socket.
    read_body(r, len, &first[4..got.min(4 + len)], held, stall)
        .await
        .map(Some)
}

/// Reads a request body of `len` bytes, of which `early` arrived already, growing the buffer
/// in chunks taken from `held`'s budget and giving up when a read waits longer than `stall`.
pub async fn read_body<R: AsyncRead + Unpin>(
    r: &mut R,
    len: usize,
    early: &[u8],
    held: &mut Held,
    stall: Duration,
) -> Result<Vec<u8>, RequestError> {
    let large = len > SMALL_FRAME;
    let mut early = &early[..early.len().min(len)];
    let mut body: Vec<u8> = Vec::new();
    while body.len() < len {
        if body.len() == body.capacity() {
            let want = (body.capacity() * 2).max(CHUNK).min(len);
            let before = body.capacity();
            if !held.grow(want - before, large) {
                return Err(RequestError::OverBudget { len });
            }
            body.reserve_exact(want - body.len());
            held.force(body.capacity().saturating_sub(want));
        }
        if !early.is_empty() {
            let n = early.len().min(body.capacity() - body.len());
            body.extend_from_slice(&early[..n]);
            early = &early[n..];
            continue;
        }
        let room = (body.capacity() - body.len()).min(len - body.len());
        let mut window = (&mut *r).take(room as u64);
        match tokio::time::timeout(stall, window.read_buf(&mut body)).await {
            Err(_) => return Err(RequestError::Stalled(stall)),
            Ok(Ok(0)) => return Err(eof()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.into()),
        }
    }
    Ok(body)
}

pub async fn read_some<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut [u8],
    stall: Duration,
) -> Result<usize, RequestError> {
    match tokio::time::timeout(stall, r.read(buf)).await {
        Err(_) => Err(RequestError::Stalled(stall)),
        Ok(n) => Ok(n?),
    }
}

pub fn eof() -> RequestError {
    std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into()
}

/// Reads one frame body of at most `max` bytes from a worker (a trusted pipe, so no budget);
/// `Ok(None)` on a clean end of stream. The buffer grows only with bytes actually received.
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    max: usize,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len_buf = [0u8; 4];
    if r.read(&mut len_buf[..1]).await? == 0 {
        return Ok(None);
    }
    r.read_exact(&mut len_buf[1..]).await?;
    let len = capt_hook_proto::frame_len(len_buf, max)?;
    let mut body = Vec::with_capacity(len.min(CHUNK));
    r.take(len as u64).read_to_end(&mut body).await?;
    if body.len() < len {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(Some(body))
}

/// Writes one frame in a single write.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::new();
    capt_hook_proto::push_frame(&mut buf, body)?;
    w.write_all(&buf).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    /// [`read_request`] over `bytes` with a one-second stall and nothing to do on the first
    /// byte.
    async fn read(
        bytes: &mut &[u8],
        max: usize,
        held: &mut Held,
    ) -> Result<Option<Vec<u8>>, RequestError> {
        read_request(bytes, max, held, Duration::from_secs(1), || {}).await
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// The first read may take a whole small frame and more: the frame's bytes come back
    /// exactly, whatever size it has around the first read's, and what follows is left.
    #[test]
    fn small_frames_read_in_one_go_come_back_exactly() {
        runtime().block_on(async {
            for size in [
                1,
                100,
                FIRST_READ - 5,
                FIRST_READ - 4,
                FIRST_READ,
                3 * FIRST_READ,
            ] {
                let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
                let mut bytes = frame(&body);
                bytes.extend_from_slice(b"trailing");
                let budget = Budget::new(1 << 20, 0);
                let mut held = Held::new(Arc::clone(&budget));
                let got = read(&mut &bytes[..], 1 << 20, &mut held)
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(got, body, "{size}");
            }
        });
    }

    #[test]
    fn reads_a_frame_and_gives_its_bytes_back() {
        runtime().block_on(async {
            let budget = Budget::new(1 << 20, 0);
            let body = vec![b'x'; 200_000];
            let bytes = frame(&body);
            let mut held = Held::new(Arc::clone(&budget));
            let mut first = false;
            let got = read_request(
                &mut &bytes[..],
                1 << 20,
                &mut held,
                Duration::from_secs(1),
                || first = true,
            )
            .await
            .unwrap()
            .unwrap();
            assert_eq!(got, body);
            assert!(first);
            assert!(budget.used() >= 200_000 && budget.used() <= 400_000);
            drop(held);
            assert_eq!(budget.used(), 0);
        });
    }

    #[test]
    fn large_frames_stop_at_the_budget_but_leave_the_reserve_to_small_ones() {
        runtime().block_on(async {
            // 4 MiB budget, 1 MiB of it reserved for small frames.
            let budget = Budget::new(4 << 20, 1 << 20);
            let big = frame(&vec![b'a'; 3 << 20]);
            let mut first_held = Held::new(Arc::clone(&budget));
            let got = read(&mut &big[..], 8 << 20, &mut first_held).await;
            assert!(got.unwrap().is_some());
            // A second large frame does not fit while the first is held.
            let mut second = Held::new(Arc::clone(&budget));
            let err = read(&mut &big[..], 8 << 20, &mut second).await.unwrap_err();
            assert!(matches!(err, RequestError::OverBudget { .. }), "{err}");
            drop(second);
            // A small one still does.
            let small = frame(&vec![b'b'; 300_000]);
            let mut third = Held::new(Arc::clone(&budget));
            let got = read(&mut &small[..], 8 << 20, &mut third).await;
            assert_eq!(got.unwrap().unwrap().len(), 300_000);
            drop((first_held, third));
            assert_eq!(budget.used(), 0);
        });
    }

    #[test]
    fn a_silent_or_stalled_client_times_out() {
        runtime().block_on(async {
            let budget = Budget::new(1 << 20, 0);
            let (mut client, mut server) = tokio::io::duplex(1024);
            let mut held = Held::new(Arc::clone(&budget));
            let stall = Duration::from_millis(50);
            let err = read_request(&mut server, 1 << 20, &mut held, stall, || {})
                .await
                .unwrap_err();
            assert!(matches!(err, RequestError::Stalled(_)));
            // Half a header, then nothing.
            client.write_all(&[0, 0]).await.unwrap();
            let err = read_request(&mut server, 1 << 20, &mut held, stall, || {})
                .await
                .unwrap_err();
            assert!(matches!(err, RequestError::Stalled(_)));
            // A header and part of the body, then nothing.
            client.write_all(&[0, 0, 0, 100, b'{']).await.unwrap();
            let err = read_request(&mut server, 1 << 20, &mut held, stall, || {})
                .await
                .unwrap_err();
            assert!(matches!(err, RequestError::Stalled(_)));
        });
    }

    #[test]
    fn over_cap_is_refused_before_any_allocation() {
        runtime().block_on(async {
            let budget = Budget::new(1 << 20, 0);
            let mut held = Held::new(Arc::clone(&budget));
            let bytes = [0xffu8, 0xff, 0xff, 0xff, 1, 2, 3];
            let err = read(&mut &bytes[..], 1 << 20, &mut held).await.unwrap_err();
            assert!(matches!(
                err,
                RequestError::Frame(FrameError::TooLarge { .. })
            ));
            assert_eq!(budget.used(), 0);
        });
    }

    /// Fuzz: random request streams (lengths biased to the edges, bodies often cut short)
    /// through the budgeted reader, under a small budget. No panic, no hang; the bytes held
    /// never pass the budget, and never pass twice what was received plus one chunk, whatever
    /// length the header claimed; everything is given back when the request is dropped.
    #[test]
    fn fuzz_requests_hold_memory_in_proportion_to_what_arrived() {
        let mut x: u64 = 0x853c_49e6_748f_ea9b;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let limit = 4 << 20;
        let budget = Budget::new(limit, 1 << 20);
        let started = std::time::Instant::now();
        let mut inputs = 0u64;
        let rt = runtime();
        while started.elapsed() < Duration::from_secs(2) {
            inputs += 1;
            let claimed: u32 = match next() % 6 {
                0 => 0,
                1 => u32::MAX,
                2 => (next() % (8 << 20)) as u32,
                3 => (SMALL_FRAME + 1) as u32,
                _ => (next() % 300_000) as u32,
            };
            let sent = (claimed as usize).min((next() % 400_000) as usize);
            let mut bytes = claimed.to_be_bytes().to_vec();
            bytes.resize(4 + sent, b'x');
            if next().is_multiple_of(7) {
                bytes.truncate((next() % 4) as usize);
            }
            let mut held = Held::new(Arc::clone(&budget));
            let mut r = &bytes[..];
            let got = rt.block_on(read(&mut r, 8 << 20, &mut held));
            let received = bytes.len() - r.len();
            assert!(held.bytes <= limit);
            assert!(
                held.bytes <= (2 * received).max(CHUNK),
                "held {} after receiving {received} (claimed {claimed})",
                held.bytes
            );
            if let Ok(Some(body)) = got {
                assert_eq!(body.len(), claimed as usize);
            }
            drop(held);
            assert_eq!(budget.used(), 0);
        }
        eprintln!("fuzz_requests: {inputs} inputs in {:?}", started.elapsed());
        assert!(inputs > 100, "the fuzz loop barely ran");
    }
}
