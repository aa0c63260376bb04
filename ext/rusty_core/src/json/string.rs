//! JSON strings: finding the end (the C parser's `JSON_string` machine) and unescaping
//! (its `json_string_unescape`), quirks included.

/// A syntactically valid string literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringScan {
    /// Offset of the closing quote.
    pub end: usize,
    /// Whether the contents hold a backslash (and so need [`unescape`]).
    pub escaped: bool,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A mask with the high bit set in the first (lowest-addressed) byte of `block` that is a
/// quote, a backslash or a control character, 0 when there is none. (Bytes after the first
/// such byte may be flagged falsely, by a borrow; the first one never is.)
#[inline(always)]
fn specials(block: u64) -> u64 {
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let quote = has_zero(block ^ (ONES * b'"' as u64));
    let backslash = has_zero(block ^ (ONES * b'\\' as u64));
    let control = block.wrapping_sub(ONES * 0x20) & !block & HIGHS;
    quote | backslash | control
}

/// The first byte at or after `p` that a string's scan must look at (a quote, a
/// backslash or a control character), or a point less than eight bytes from the end.
/// Sixteen bytes at a time with SSE2 (part of x86_64): the text of tweets and posts runs
/// long between quotes. Elsewhere, and for the tail, eight bytes at a time.
#[inline(always)]
fn skip_plain(src: &[u8], mut p: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: every load reads 16 bytes inside `src`.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let below_space = _mm_set1_epi8(0x1f);
            while p + 16 <= src.len() {
                let x = _mm_loadu_si128(src.as_ptr().add(p) as *const __m128i);
                // A byte is a control character when max(byte, 0x1f) is 0x1f (unsigned).
                let control = _mm_cmpeq_epi8(_mm_max_epu8(x, below_space), below_space);
                let special = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                    control,
                );
                let mask = _mm_movemask_epi8(special) as u32;
                if mask != 0 {
                    return p + mask.trailing_zeros() as usize;
                }
                p += 16;
            }
        }
    }
    while p + 8 <= src.len() {
        let mask = specials(u64::from_le_bytes(src[p..p + 8].try_into().unwrap()));
        if mask != 0 {
            return p + (mask.trailing_zeros() / 8) as usize;
        }
        p += 8;
    }
    p
}

#[inline(always)]
fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// Checks the string literal whose opening quote is at `start`. `None` when the C machine
/// rejects it: a raw control character, a backslash before a control character, `\u`
/// without four hex digits, or no closing quote.
#[inline]
pub fn scan_string(src: &[u8], start: usize) -> Option<StringScan> {
    let mut p = start + 1;
    let mut escaped = false;
    loop {
        p = skip_plain(src, p);
        let &c = src.get(p)?;
        match c {
            b'"' => return Some(StringScan { end: p, escaped }),
            b'\\' => {
                escaped = true;
                let &n = src.get(p + 1)?;
                if n == b'u' {
                    let hex = src.get(p + 2..p + 6)?;
                    if !hex.iter().all(|&h| is_hex(h)) {
                        return None;
                    }
                    p += 6;
                } else if n < 0x20 {
                    return None;
                } else {
                    p += 2;
                }
            }
            0..=0x1f => return None,
            _ => p += 1,
        }
    }
}

/// A `\uD8xx` high surrogate too close to the end of the string: the C code raises
/// "incomplete surrogate pair at '…'" quoting the source from `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnescapeError {
    pub at: usize,
}

fn hex4(b: &[u8]) -> u32 {
    let mut result = 0u32;
    for &h in &b[..4] {
        let d = match h {
            b'0'..=b'9' => h - b'0',
            b'a'..=b'f' => h - b'a' + 10,
            b'A'..=b'F' => h - b'A' + 10,
            _ => return 0xFFFD,
        };
        result = (result << 4) | d as u32;
    }
    result
}

fn push_utf32(out: &mut Vec<u8>, ch: u32) {
    if ch <= 0x7F {
        out.push(ch as u8);
    } else if ch <= 0x7FF {
        out.extend_from_slice(&[(ch >> 6) as u8 | 0xC0, (ch & 0x3F) as u8 | 0x80]);
    } else if ch <= 0xFFFF {
        out.extend_from_slice(&[
            (ch >> 12) as u8 | 0xE0,
            ((ch >> 6) & 0x3F) as u8 | 0x80,
            (ch & 0x3F) as u8 | 0x80,
        ]);
    } else if ch <= 0x1F_FFFF {
        out.extend_from_slice(&[
            (ch >> 18) as u8 | 0xF0,
            ((ch >> 12) & 0x3F) as u8 | 0x80,
            ((ch >> 6) & 0x3F) as u8 | 0x80,
            (ch & 0x3F) as u8 | 0x80,
        ]);
    } else {
        out.push(b'?');
    }
}

/// Appends the unescaped contents of `src[begin..end]` (a literal [`scan_string`] accepted,
/// without its quotes) to `out`, exactly as json 2.6's `json_string_unescape` does.
pub fn unescape(
    src: &[u8],
    begin: usize,
    end: usize,
    out: &mut Vec<u8>,
) -> Result<(), UnescapeError> {
    let mut p = begin; // start of the bytes not yet copied
    let mut pe = begin;
    while pe < end {
        let Some(off) = memchr::memchr(b'\\', &src[pe..end]) else {
            pe = end;
            break;
        };
        pe += off;
        out.extend_from_slice(&src[p..pe]);
        pe += 1;
        let mut buf = [0u8; 1];
        let replacement: &[u8] = match src[pe] {
            b'n' => b"\n",
            b'r' => b"\r",
            b't' => b"\t",
            b'"' => b"\"",
            b'\\' => b"\\",
            b'b' => b"\x08",
            b'f' => b"\x0c",
            b'u' => {
                let mut ch = hex4(&src[pe + 1..]);
                pe += 4;
                let mut unpaired = false;
                if ch & 0xFC00 == 0xD800 {
                    pe += 1;
                    if pe + 6 > end {
                        return Err(UnescapeError { at: p });
                    }
                    if src[pe] == b'\\' && src[pe + 1] == b'u' {
                        let sur = hex4(&src[pe + 2..]);
                        ch = ((ch & 0x3F) << 10) | ((((ch >> 6) & 0xF) + 1) << 16) | (sur & 0x3FF);
                        pe += 5;
                    } else {
                        unpaired = true;
                    }
                }
                if unpaired {
                    buf[0] = b'?';
                    &buf
                } else {
                    push_utf32(out, ch);
                    pe += 1;
                    p = pe;
                    continue;
                }
            }
            _ => {
                // Unknown escape: drop the backslash, keep the byte.
                p = pe;
                continue;
            }
        };
        out.extend_from_slice(replacement);
        pe += 1;
        p = pe;
    }
    out.extend_from_slice(&src[p..pe]);
    Ok(())
}
