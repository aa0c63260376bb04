//! JSON strings: finding the end (the C parser's `JSON_string` machine) and unescaping
//! (its `json_string_unescape`), quirks included.

use super::generate::push_bytes;

/// A syntactically valid string literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringScan {
    /// Offset of the closing quote.
    pub end: usize,
    /// Whether the contents hold a backslash (and so need [`unescape`]).
    pub escaped: bool,
}

/// Checks the string literal whose opening quote is at `start`. `None` when the C machine
/// rejects it: a raw control character, a backslash before a control character, `\u`
/// without four hex digits, or no closing quote.
#[inline]
pub fn scan_string(src: &[u8], start: usize) -> Option<StringScan> {
    let mut p = start + 1;
    let mut escaped = false;
    loop {
        // The first quote, backslash or control character: the bytes the generator
        // escapes (without `/`) are the ones this scan must stop at.
        p = super::generate::find_escape(src, p, false);
        let &c = src.get(p)?;
        match c {
            b'"' => return Some(StringScan { end: p, escaped }),
            b'\\' => {
                escaped = true;
                let &n = src.get(p + 1)?;
                if n == b'u' {
                    hex_digits(src.get(p + 2..p + 6)?)?;
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

/// The value of four hex digits at the start of `b` (json 2's parser has checked them),
/// U+FFFD if one is not.
#[inline(always)]
fn hex4(b: &[u8]) -> u32 {
    hex_digits(&b[..4]).unwrap_or(0xFFFD)
}

/// The value of the four hex digits `b` holds, `None` if one is not a hex digit. A table
/// lookup per digit, without a branch per digit: `\u003c`-style escapes are most of what
/// HTML in JSON needs unescaping for.
#[inline(always)]
pub(in crate::json) fn hex_digits(b: &[u8]) -> Option<u32> {
    let [a, b, c, d] = [0, 1, 2, 3].map(|i| HEX[b[i] as usize]);
    // A non-digit's high bits survive the OR.
    ((a | b | c | d) & NOT_HEX == 0)
        .then_some((a as u32) << 12 | (b as u32) << 8 | (c as u32) << 4 | d as u32)
}

/// Each byte's value as a hex digit, or `NOT_HEX`.
const HEX: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};
const NOT_HEX: u8 = 0xF0;

/// Appends `ch` as UTF-8 (`?` beyond U+1FFFFF, as json 2.6 writes it). The json 3 parser
/// uses it too.
#[inline(always)]
pub(in crate::json) fn push_utf32(out: &mut Vec<u8>, ch: u32) {
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

/// The first backslash in `src[from..end]`. The runs between escapes are mostly short
/// (`\u003cp\u003e` in HTML, `\u30b9` in CJK text), and `memchr`'s call and dispatch
/// cost more than its search there: sixteen bytes at a time inline, then `memchr` for
/// what is left of a long run.
#[inline(always)]
pub(in crate::json) fn find_backslash(src: &[u8], from: usize, end: usize) -> Option<usize> {
    let src = &src[..end];
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: every load reads 16 bytes inside `src`; SSE2 is part of x86_64.
        unsafe {
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let stop = src.len().min(from + 64);
            while i + 16 <= stop {
                let x = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(x, backslash));
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    if src.len() - i < 16 {
        return src[i..].iter().position(|&b| b == b'\\').map(|k| i + k);
    }
    memchr::memchr(b'\\', &src[i..]).map(|k| i + k)
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
        let Some(backslash) = find_backslash(src, pe, end) else {
            pe = end;
            break;
        };
        pe = backslash;
        push_bytes(out, &src[p..pe]);
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
    push_bytes(out, &src[p..pe]);
    Ok(())
}

/// Whether `a` and `b` hold the same bytes. Object keys are short: up to 32 bytes they are
/// compared with two to four overlapping word loads each, inline, where `==` on slices
/// calls `memcmp` (json 3.1.0 parses of twitter.json and citm_catalog.json: 1.4% fewer
/// instructions).
#[inline(always)]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let u64_at = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    let u32_at = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        8..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        17..=32 => {
            u64_at(a, 0) == u64_at(b, 0)
                && u64_at(a, 8) == u64_at(b, 8)
                && u64_at(a, n - 16) == u64_at(b, n - 16)
                && u64_at(a, n - 8) == u64_at(b, n - 8)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod same_bytes_tests {
    use super::same_bytes;

    /// Every length up to 40, equal and differing at each single byte.
    #[test]
    fn tells_every_difference() {
        for n in 0..=40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            assert!(same_bytes(&a, &a.clone()), "len {n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x01;
                assert!(!same_bytes(&a, &b), "len {n}, byte {i}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_bytes(&a, &longer), "len {n} against {}", n + 1);
        }
    }
}
