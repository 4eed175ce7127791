//! Async counterparts of `capt_hook_proto::{read_frame, write_frame}` for tokio streams, with
//! the same bounds: the cap is checked before the body is read, and the buffer grows only with
//! bytes actually received.

use capt_hook_proto::FrameError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Reads one frame body of at most `max` bytes; `Ok(None)` on a clean end of stream.
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
    let mut body = Vec::with_capacity(len.min(64 * 1024));
    r.take(len as u64).read_to_end(&mut body).await?;
    if body.len() < len {
        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
    }
    Ok(Some(body))
}

/// Writes one frame in a single write.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(body);
    w.write_all(&buf).await?;
    w.flush().await
}
