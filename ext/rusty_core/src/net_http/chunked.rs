//! Chunked bodies as `Net::HTTPResponse#read_chunked` (net-http 0.2.0 / 0.4.1) reads
//! them, over the bytes already in Net::BufferedIO's read buffer.
//!
//! The stdlib reads a chunked body as a sequence of items: a size line (`readline`,
//! first hex run), the chunk's data (`read len`), two unchecked bytes (`read 2`), and
//! after the last chunk trailer lines up to an empty one. [`scan`] takes as many whole
//! items as the buffer holds and stops in front of the first one it cannot finish (or
//! does not take: a size line without hex digits or one past i64::MAX). The caller
//! then runs the stdlib's own code for that one item, which reads more from the socket
//! (or raises), and scans again. Data is the exception: a chunk that is only partly
//! buffered is handed over as far as it goes, which is what `BufferedIO#read` does with
//! it first too.

/// Where a chunked body's reading stands between items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Next: a chunk-size line.
    Size,
    /// Next: this many bytes of chunk data (never 0).
    Data(u64),
    /// Next: the two bytes after a chunk's data.
    Crlf,
    /// Next: a trailer line (the last-chunk line has been read).
    Trailer,
    /// The empty line after the trailers has been read.
    Done,
}

/// A line as `BufferedIO#readline` returns it (`readuntil("\n").chop`): the bytes up to
/// and including the first `\n` in `buf`, without the `\n` and a `\r` before it, and
/// the number of bytes it takes up. `None` when `buf` holds no `\n`.
pub fn line(buf: &[u8]) -> Option<(&[u8], usize)> {
    let nl = buf.iter().position(|&b| b == b'\n')?;
    let mut end = nl;
    if end > 0 && buf[end - 1] == b'\r' {
        end -= 1;
    }
    Some((&buf[..end], nl + 1))
}

/// Reads whole items from `buf` starting in `phase`, handing chunk data to `data`
/// (which answers false when it cannot take it; the scan then stops in front of it).
/// Returns how many bytes of `buf` were taken; `phase` is where reading stands after
/// them.
pub fn scan(buf: &[u8], phase: &mut Phase, mut data: impl FnMut(&[u8]) -> bool) -> usize {
    let mut at = 0;
    loop {
        let rest = &buf[at..];
        match *phase {
            Phase::Done => return at,
            Phase::Size => {
                let Some((text, used)) = line(rest) else {
                    return at;
                };
                // Sizes past i64::MAX (Ruby Bignums or near) are left to the caller.
                let Some(size) = super::response::chunk_size_digits(text)
                    .and_then(super::response::hex_u64)
                    .filter(|&size| i64::try_from(size).is_ok())
                else {
                    return at;
                };
                *phase = if size == 0 {
                    Phase::Trailer
                } else {
                    Phase::Data(size)
                };
                at += used;
            }
            Phase::Data(left) => {
                if rest.is_empty() {
                    return at;
                }
                let take = usize::try_from(left).map_or(rest.len(), |l| l.min(rest.len()));
                if !data(&rest[..take]) {
                    return at;
                }
                at += take;
                let left = left - take as u64;
                *phase = if left == 0 {
                    Phase::Crlf
                } else {
                    Phase::Data(left)
                };
            }
            Phase::Crlf => {
                if rest.len() < 2 {
                    return at;
                }
                at += 2;
                *phase = Phase::Size;
            }
            Phase::Trailer => {
                let Some((text, used)) = line(rest) else {
                    return at;
                };
                at += used;
                if text.is_empty() {
                    *phase = Phase::Done;
                }
            }
        }
    }
}
