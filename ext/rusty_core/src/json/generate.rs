//! The byte-level half of JSON generation as json 2.6.1's C generator writes it: string
//! escaping (plain and `ascii_only`, with its UTF-8 checks and messages), integers, and
//! floats in exactly `Float#to_s`'s text.

use super::output::Output;
use crate::dtoa;

/// Why a string could not be written (json 2.6.1's `GeneratorError` messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscapeError {
    /// A multi-byte sequence runs past the end of the string.
    Partial,
    /// A sequence that is not well-formed UTF-8.
    Malformed,
}

impl EscapeError {
    pub fn message(self) -> &'static str {
        match self {
            EscapeError::Partial => "partial character in source, but hit end",
            EscapeError::Malformed => "source sequence is illegal/malformed utf-8",
        }
    }
}

/// How many bytes follow a lead byte (the gem's table, which still knows 5- and 6-byte forms).
const fn trailing(lead: u8) -> usize {
    match lead {
        0..=0xbf => 0,
        0xc0..=0xdf => 1,
        0xe0..=0xef => 2,
        0xf0..=0xf7 => 3,
        0xf8..=0xfb => 4,
        _ => 5,
    }
}

/// The gem's `isLegalUTF8` for a sequence whose length came from its lead byte.
fn legal(seq: &[u8]) -> bool {
    let lead = seq[0];
    match seq.len() {
        1 => lead < 0x80 || (0xc2..=0xf4).contains(&lead),
        2..=4 => {
            if seq[2..].iter().any(|&b| !(0x80..=0xbf).contains(&b)) {
                return false;
            }
            let a = seq[1];
            if a > 0xbf {
                return false;
            }
            let ok = match lead {
                0xe0 => a >= 0xa0,
                0xed => a <= 0x9f,
                0xf0 => a >= 0x90,
                0xf4 => a <= 0x8f,
                _ => a >= 0x80,
            };
            ok && (0xc2..=0xf4).contains(&lead)
        }
        _ => false,
    }
}

/// 0: copy as is; 1: needs an escape (control, `"`, `\`); 2: `/`; 3: non-ASCII.
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = if i < 0x20 || i == b'"' as usize || i == b'\\' as usize {
            1
        } else if i == b'/' as usize {
            2
        } else if i >= 0x80 {
            3
        } else {
            0
        };
        i += 1;
    }
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u_escape(out: &mut impl Output, unit: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[(unit >> 12) as usize & 0xf],
        HEX[(unit >> 8) as usize & 0xf],
        HEX[(unit >> 4) as usize & 0xf],
        HEX[unit as usize & 0xf],
    ]);
}

/// The letter after the backslash of each byte's two-character escape (`\"`, `\\`,
/// `\n`, `\r`, `\t`, `\f`, `\b`); 0 for the bytes escaped as `\u00XX`.
const SHORT_ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[b'\t' as usize] = b't';
    t[0x0c] = b'f';
    t[0x08] = b'b';
    t
};

/// The escape of `c`, a byte that needs one. Inlined with a table lookup: in an
/// escape-heavy document (HTML in activitypub.json) a call and a `match` per escape
/// showed in profiles.
#[inline(always)]
fn push_ascii_escape(out: &mut impl Output, c: u8) {
    let letter = SHORT_ESCAPES[c as usize];
    if letter == 0 {
        return push_u_escape(out, c as u32);
    }
    push_bytes(out, &[b'\\', letter]);
}

/// Appends the contents of a JSON string (without quotes) for UTF-8 bytes `s`. With
/// `ascii_only` every non-ASCII character becomes `\uXXXX` (surrogate pairs above the BMP).
/// On error `out` may hold part of the string; callers discard it.
pub fn escape_string(
    s: &[u8],
    ascii_only: bool,
    escape_slash: bool,
    out: &mut impl Output,
) -> Result<(), EscapeError> {
    if !ascii_only && std::str::from_utf8(s).is_ok() {
        // Well-formed UTF-8 is exactly what the gem's per-character `isLegalUTF8` checks
        // accept, so only the ASCII escapes are left to find.
        escape_valid_utf8(s, escape_slash, out);
        return Ok(());
    }
    escape_checked(s, ascii_only, escape_slash, out)
}

/// The gem's `convert_UTF8_to_JSON(_ASCII)` character by character, with its UTF-8 checks.
fn escape_checked(
    s: &[u8],
    ascii_only: bool,
    escape_slash: bool,
    out: &mut impl Output,
) -> Result<(), EscapeError> {
    out.reserve(s.len());
    let mut start = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match CLASS[c as usize] {
            0 => i += 1,
            1 => {
                out.extend_from_slice(&s[start..i]);
                push_ascii_escape(out, c);
                i += 1;
                start = i;
            }
            2 => {
                if escape_slash {
                    out.extend_from_slice(&s[start..i]);
                    out.extend_from_slice(b"\\/");
                    start = i + 1;
                }
                i += 1;
            }
            _ => {
                let len = trailing(c) + 1;
                if i + len > s.len() {
                    return Err(EscapeError::Partial);
                }
                let seq = &s[i..i + len];
                if !legal(seq) {
                    return Err(EscapeError::Malformed);
                }
                if ascii_only {
                    out.extend_from_slice(&s[start..i]);
                    let mut ch: u32 = (c as u32) & (0x7f >> len);
                    for &b in &seq[1..] {
                        ch = (ch << 6) | (b as u32 & 0x3f);
                    }
                    if ch > 0xffff {
                        let v = ch - 0x10000;
                        push_u_escape(out, 0xd800 + (v >> 10));
                        push_u_escape(out, 0xdc00 + (v & 0x3ff));
                    } else {
                        push_u_escape(out, ch);
                    }
                    start = i + len;
                }
                i += len;
            }
        }
    }
    out.extend_from_slice(&s[start..]);
    Ok(())
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `block` is a control character, `"`, `\\` or (with `slash`) `/`.
#[inline(always)]
fn needs_escape_in(block: u64, slash: bool) -> bool {
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let quote = has_zero(block ^ (ONES * b'"' as u64));
    let backslash = has_zero(block ^ (ONES * b'\\' as u64));
    let control = block.wrapping_sub(ONES * 0x20) & !block & HIGHS;
    let slash = if slash {
        has_zero(block ^ (ONES * b'/' as u64))
    } else {
        0
    };
    (quote | backslash | control | slash) != 0
}

/// `out.extend_from_slice(b)` without a call to `memcpy` for the short pieces (keys,
/// numbers, delimiters) that make up most of a document.
#[inline(always)]
pub fn push_bytes(out: &mut (impl Output + ?Sized), b: &[u8]) {
    out.reserve(b.len());
    // SAFETY: `b.len()` bytes are reserved after `len`.
    unsafe {
        copy_bytes(b, out.as_mut_ptr().add(out.len()));
        out.set_len(out.len() + b.len());
    }
}

/// Copies `b` to `dst`: pieces up to 32 bytes as two overlapping loads and stores of the
/// largest size that fits, longer ones with `memcpy`.
///
/// # Safety
/// `dst` must be valid for `b.len()` bytes of writes and not overlap `b`.
#[inline(always)]
unsafe fn copy_bytes(b: &[u8], dst: *mut u8) {
    let n = b.len();
    let src = b.as_ptr();
    // Every read is inside `b` (the moves overlap in the middle instead of reading past
    // either end).
    if n > 32 {
        std::ptr::copy_nonoverlapping(src, dst, n);
    } else if n >= 16 {
        let lo = (src as *const u128).read_unaligned();
        let hi = (src.add(n - 16) as *const u128).read_unaligned();
        (dst as *mut u128).write_unaligned(lo);
        (dst.add(n - 16) as *mut u128).write_unaligned(hi);
    } else if n >= 8 {
        let lo = (src as *const u64).read_unaligned();
        let hi = (src.add(n - 8) as *const u64).read_unaligned();
        (dst as *mut u64).write_unaligned(lo);
        (dst.add(n - 8) as *mut u64).write_unaligned(hi);
    } else if n >= 4 {
        let lo = (src as *const u32).read_unaligned();
        let hi = (src.add(n - 4) as *const u32).read_unaligned();
        (dst as *mut u32).write_unaligned(lo);
        (dst.add(n - 4) as *mut u32).write_unaligned(hi);
    } else {
        for i in 0..n {
            *dst.add(i) = *src.add(i);
        }
    }
}

/// Whether any byte of `s` needs an escape (a control character, `"`, `\\`, or with
/// `slash` a `/`). Most strings need none and are then copied whole; every length is
/// read in at most two overlapping words or 16-byte blocks per 16 bytes, never a byte
/// at a time.
#[inline(always)]
fn needs_escape(s: &[u8], slash: bool) -> bool {
    let n = s.len();
    let p = s.as_ptr();
    // SAFETY: every read is inside `s` (the short cases overlap in the middle).
    unsafe {
        if n >= 16 {
            return find_escape(s, 0, slash) < n;
        }
        if n >= 8 {
            let lo = (p as *const u64).read_unaligned();
            let hi = (p.add(n - 8) as *const u64).read_unaligned();
            return needs_escape_in(lo, slash) || needs_escape_in(hi, slash);
        }
        // Which byte of the word is which does not matter: only whether any needs one.
        let block = if n >= 4 {
            let lo = (p as *const u32).read_unaligned() as u64;
            let hi = (p.add(n - 4) as *const u32).read_unaligned() as u64;
            lo | (hi << 32)
        } else {
            // The missing bytes are spaces, which need no escape.
            let mut block = ONES * b' ' as u64;
            for i in 0..n {
                block = (block & !(0xff << (8 * i))) | ((*p.add(i) as u64) << (8 * i));
            }
            block
        };
        needs_escape_in(block, slash)
    }
}

/// A JSON string `"..."` of `s`, which the caller knows to be well-formed UTF-8 (without
/// `ascii_only`) or plain ASCII (with or without it): one reserve and one copy when no
/// byte needs an escape, as in most strings.
#[inline(always)]
pub fn quote_valid_utf8(s: &[u8], escape_slash: bool, out: &mut impl Output) {
    if needs_escape(s, escape_slash) {
        out.push(b'"');
        escape_valid_utf8(s, escape_slash, out);
        out.push(b'"');
        return;
    }
    let n = s.len();
    out.reserve(n + 2);
    // SAFETY: `n + 2` bytes are reserved after `len`.
    unsafe {
        let dst = out.as_mut_ptr().add(out.len());
        *dst = b'"';
        copy_bytes(s, dst.add(1));
        *dst.add(n + 1) = b'"';
        out.set_len(out.len() + n + 2);
    }
}

/// The first byte at or after `from` that needs an escape (a control character, `"`,
/// `\\`, or with `slash` a `/`), or `s.len()`. The parser's string scan stops at the
/// same bytes (without `slash`), so it uses this too.
#[inline(always)]
pub(super) fn find_escape(s: &[u8], from: usize, slash: bool) -> usize {
    // Each its own loop: without `slash`, one comparison fewer per block.
    if slash {
        find_escape_in::<true>(s, from)
    } else {
        find_escape_in::<false>(s, from)
    }
}

#[inline(always)]
fn find_escape_in<const SLASH: bool>(s: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of x86_64: sixteen bytes at a time.
        // SAFETY: every block read lies inside `s`.
        unsafe {
            // Most strings (keys, dates, URLs) end in the first two blocks, inline.
            for _ in 0..2 {
                if i + 16 > s.len() {
                    break;
                }
                if let Some(at) = sse2_block::<SLASH>(s, i) {
                    return at;
                }
                i += 16;
            }
            // Longer runs (HTML and prose in activitypub's and twitter's strings) go 32
            // bytes at a time where the CPU has AVX2; with less than `AVX2_FROM` left the
            // call would cost more than it saves.
            if s.len() - i >= AVX2_FROM && avx2::available() {
                // SAFETY: AVX2 is available.
                return avx2::find_escape::<SLASH>(s, i);
            }
            while i + 16 <= s.len() {
                if let Some(at) = sse2_block::<SLASH>(s, i) {
                    return at;
                }
                i += 16;
            }
        }
    }
    find_escape_tail::<SLASH>(s, i)
}

/// The first byte that needs an escape among the sixteen at `i`, if any.
///
/// # Safety
/// `s[i..i + 16]` must lie inside `s`. (SSE2 is part of x86_64.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn sse2_block<const SLASH: bool>(s: &[u8], i: usize) -> Option<usize> {
    use std::arch::x86_64::*;
    let x = _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i);
    let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
    let quote_or_backslash = _mm_or_si128(
        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8)),
        _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8)),
    );
    let mut hits = _mm_or_si128(quote_or_backslash, control);
    if SLASH {
        hits = _mm_or_si128(hits, _mm_cmpeq_epi8(x, _mm_set1_epi8(b'/' as i8)));
    }
    let mask = _mm_movemask_epi8(hits);
    (mask != 0).then(|| i + mask.trailing_zeros() as usize)
}

/// `find_escape` for the last bytes, fewer than a SIMD block: eight at a time, then one.
#[inline(always)]
fn find_escape_tail<const SLASH: bool>(s: &[u8], mut i: usize) -> usize {
    while i + 8 <= s.len() {
        let block = u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
        if needs_escape_in(block, SLASH) {
            break;
        }
        i += 8;
    }
    while i < s.len() {
        match CLASS[s[i] as usize] {
            1 => return i,
            2 if SLASH => return i,
            _ => i += 1,
        }
    }
    i
}

/// How many bytes must be left, after the two inline blocks, for `find_escape` to call the
/// AVX2 loop: with fewer, the SSE2 blocks they take cost less than the call.
#[cfg(target_arch = "x86_64")]
const AVX2_FROM: usize = 64;

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// 0: not asked yet, 1: no, 2: yes: the check in the scan is one load.
    static AVAILABLE: AtomicU8 = AtomicU8::new(0);

    #[inline(always)]
    pub(super) fn available() -> bool {
        match AVAILABLE.load(Ordering::Relaxed) {
            0 => detect(),
            known => known == 2,
        }
    }

    #[cold]
    fn detect() -> bool {
        let yes = std::is_x86_feature_detected!("avx2");
        AVAILABLE.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
        yes
    }

    /// `find_escape_in` 32 bytes at a time, then the SSE2 and scalar steps for the rest.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn find_escape<const SLASH: bool>(s: &[u8], mut i: usize) -> usize {
        let control_max = _mm256_set1_epi8(0x1f);
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let slash = _mm256_set1_epi8(b'/' as i8);
        // SAFETY: every load reads 32 (then 16) bytes inside `s`.
        unsafe {
            while i + 32 <= s.len() {
                let x = _mm256_loadu_si256(s.as_ptr().add(i) as *const __m256i);
                let control = _mm256_cmpeq_epi8(_mm256_min_epu8(x, control_max), x);
                let mut hits = _mm256_or_si256(
                    _mm256_or_si256(_mm256_cmpeq_epi8(x, quote), _mm256_cmpeq_epi8(x, backslash)),
                    control,
                );
                if SLASH {
                    hits = _mm256_or_si256(hits, _mm256_cmpeq_epi8(x, slash));
                }
                let mask = _mm256_movemask_epi8(hits) as u32;
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 32;
            }
            if i + 16 <= s.len() {
                if let Some(at) = super::sse2_block::<SLASH>(s, i) {
                    return at;
                }
                i += 16;
            }
        }
        super::find_escape_tail::<SLASH>(s, i)
    }
}

/// [`escape_string`] for a string the caller knows to be well-formed UTF-8 (without
/// `ascii_only`) or plain ASCII (with or without it): copies the runs between escapes
/// whole.
pub fn escape_valid_utf8(s: &[u8], escape_slash: bool, out: &mut impl Output) {
    out.reserve(s.len() + 2);
    let mut start = 0;
    loop {
        let i = find_escape(s, start, escape_slash);
        push_bytes(out, &s[start..i]);
        let Some(&c) = s.get(i) else { break };
        if c == b'/' {
            out.extend_from_slice(b"\\/");
        } else {
            push_ascii_escape(out, c);
        }
        start = i + 1;
    }
}

/// json 2.9's `script_safe` also writes U+2028 and U+2029 (line separators to
/// JavaScript) as `\u2028` and `\u2029`: rewrites them in `out` from `from` on, which
/// holds escaped, well-formed UTF-8 (so their bytes E2 80 A8/A9 are only ever those
/// characters).
pub fn escape_js_separators(out: &mut impl Output, from: usize) {
    let is_separator = |w: &[u8]| w[0] == 0xe2 && w[1] == 0x80 && (w[2] == 0xa8 || w[2] == 0xa9);
    if !out[from..].windows(3).any(is_separator) {
        return;
    }
    let tail = out[from..].to_vec();
    out.truncate(from);
    let mut i = 0;
    while i < tail.len() {
        if i + 3 <= tail.len() && is_separator(&tail[i..i + 3]) {
            out.extend_from_slice(if tail[i + 2] == 0xa8 {
                b"\\u2028"
            } else {
                b"\\u2029"
            });
            i += 3;
        } else {
            out.push(tail[i]);
            i += 1;
        }
    }
}

/// "00" to "99", for writing two digits at a time.
const DIGIT_PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `DIGIT_COUNT_STEPS[b]` added to an `x` of `b + 1` bits puts its count of decimal
/// digits in the high half: `b` fixes the count up to one, and the step's low half
/// carries into it exactly when `x` reaches the next power of ten (the table method
/// Daniel Lemire describes for 32-bit integers). Cheaper than `ilog10`'s comparisons.
const DIGIT_COUNT_STEPS: [u64; 32] = {
    let mut steps = [0u64; 32];
    let mut b = 0;
    while b < 32 {
        // The digits of 2^b, and the power of ten just above it.
        let (mut digits, mut power) = (1u64, 10u64);
        while power <= 1 << b {
            digits += 1;
            power *= 10;
        }
        steps[b] = if power < 1 << 32 {
            (digits << 32) + (1 << 32) - power
        } else {
            digits << 32
        };
        b += 1;
    }
    steps
};

/// How many decimal digits `x` has (1 for 0).
#[inline(always)]
fn decimal_digits(x: u32) -> usize {
    let bits = 31 - (x | 1).leading_zeros();
    ((x as u64 + DIGIT_COUNT_STEPS[bits as usize]) >> 32) as usize
}

/// Appends `n` in decimal, its digits written in place from the last one (assembling
/// them in a stack buffer first and copying that stalled on the partial stores).
/// Magnitudes that fit 32 bits (nearly every integer in JSON documents) are written with
/// 32-bit division, four digits per step. Always inlined: left out of line, the call and
/// its register saves were a third of the ~50 instructions a small integer cost.
#[inline(always)]
pub fn write_i64(n: i64, out: &mut impl Output) {
    match u32::try_from(n.unsigned_abs()) {
        Ok(v) => write_u32_magnitude(v, n < 0, out),
        Err(_) => write_u64_magnitude(n.unsigned_abs(), n < 0, out),
    }
}

#[inline(always)]
fn write_u32_magnitude(mut v: u32, negative: bool, out: &mut impl Output) {
    let len = decimal_digits(v) + negative as usize;
    out.reserve(len);
    // SAFETY: `len` bytes are reserved after `out.len()`, and exactly those are written:
    // the digits ending at `len`, and the sign (if any) before them.
    unsafe {
        let start = out.as_mut_ptr().add(out.len());
        let mut end = start.add(len);
        while v >= 10_000 {
            let four = v % 10_000;
            v /= 10_000;
            end = end.sub(4);
            write_pair(end, four / 100);
            write_pair(end.add(2), four % 100);
        }
        if v >= 100 {
            end = end.sub(2);
            write_pair(end, v % 100);
            v /= 100;
        }
        if v >= 10 {
            write_pair(end.sub(2), v);
        } else {
            *end.sub(1) = b'0' + v as u8;
        }
        if negative {
            *start = b'-';
        }
        out.set_len(out.len() + len);
    }
}

/// `write_i64` of a magnitude above 32 bits (rare): its low digits two per 64-bit
/// division until the rest fits, that rest by `write_u32_magnitude`, then the low digits.
#[cold]
fn write_u64_magnitude(mut v: u64, negative: bool, out: &mut impl Output) {
    let mut low = [0u8; 20];
    let mut at = low.len();
    while v > u32::MAX as u64 {
        at -= 2;
        let pair = (v % 100) as usize * 2;
        low[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        v /= 100;
    }
    write_u32_magnitude(v as u32, negative, out);
    out.extend_from_slice(&low[at..]);
}

/// Writes the two digits of `pair` (below 100) at `dst`.
///
/// # Safety
/// `dst` is valid for two bytes of writes.
#[inline(always)]
pub(crate) unsafe fn write_pair(dst: *mut u8, pair: u32) {
    std::ptr::copy_nonoverlapping(DIGIT_PAIRS.as_ptr().add(pair as usize * 2), dst, 2);
}

/// Appends a finite `f` exactly as Ruby's `Float#to_s` writes it: the shortest digits that
/// round-trip, fixed notation for decimal exponents -4 <= e < 15 (`100.0`, `0.0001`),
/// otherwise `d.ddde+XX` (at least two exponent digits), and always a fractional part.
/// Non-finite values are written as `NaN`, `Infinity`, `-Infinity`.
pub fn write_f64(f: f64, out: &mut impl Output) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f < 0.0 { b"-Infinity" } else { b"Infinity" });
        return;
    }
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(f).as_bytes();
    if renders_as_ruby(f) {
        push_bytes(out, text);
        return;
    }
    write_f64_from_text(text, out);
}

/// [`write_f64`]'s general way: the digits dtoa gives `f` (from Żmij's rendering `text`),
/// laid out as Ruby does.
fn write_f64_from_text(text: &[u8], out: &mut impl Output) {
    let shortest = dtoa::from_shortest_text(text);
    let digits = shortest.digits();
    let decpt = shortest.decpt;
    if shortest.negative {
        out.push(b'-');
    }
    let nd = digits.len() as i32;
    // Ruby writes a fraction in fixed notation up to 16 integer digits, an integral value
    // only up to 15 (DBL_DIG): 1234567890123456.7 but 1.234567890123456e+15.
    if decpt > 0 && (decpt < nd || decpt <= 15) {
        if decpt < nd {
            out.extend_from_slice(&digits[..decpt as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt as usize..]);
        } else {
            out.extend_from_slice(digits);
            out.push_repeated(b'0', (decpt - nd) as usize);
            out.extend_from_slice(b".0");
        }
    } else if decpt <= 0 && decpt > -4 {
        out.extend_from_slice(b"0.");
        out.push_repeated(b'0', (-decpt) as usize);
        out.extend_from_slice(digits);
    } else {
        out.push(digits[0]);
        out.push(b'.');
        if nd > 1 {
            out.extend_from_slice(&digits[1..]);
        } else {
            out.push(b'0');
        }
        let e = decpt - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let a = e.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        write_i64(a as i64, out);
    }
}

/// Whether Żmij's rendering of finite `f` (dtoa's shortest digits, see [`dtoa`]; fixed
/// notation for decimal exponents -5 <= e <= 15, ".0" after an integral value) is also
/// Ruby's. Ruby writes fixed notation for 1e-4 <= |f| < 1e16, but an integral value only
/// below 1e15 (1.0e+15), so both agree on 1e-4 <= |f| < 1e15 and on zero. Comparing `f`
/// itself with the doubles nearest 1e-4 and 1e15 decides exactly for its shortest digits:
/// those round to `f`, and rounding keeps order, so they lie on the same side of 10^k as
/// `f` does of double(10^k).
#[inline(always)]
fn renders_as_ruby(f: f64) -> bool {
    let magnitude = f.abs();
    (1e-4..1e15).contains(&magnitude) || magnitude == 0.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_js_separators_after_the_mark_only() {
        let mut out = "\u{2028}|".as_bytes().to_vec();
        let mark = out.len();
        out.extend_from_slice("\"a\u{2028}b\u{2029}\u{e9}\"".as_bytes());
        super::escape_js_separators(&mut out, mark);
        assert_eq!(out, "\u{2028}|\"a\\u2028b\\u2029\u{e9}\"".as_bytes());
        let mut plain = b"\"abc\"".to_vec();
        super::escape_js_separators(&mut plain, 0);
        assert_eq!(plain, b"\"abc\"");
    }

    use super::*;

    fn float(f: f64) -> String {
        let mut v = Vec::new();
        write_f64(f, &mut v);
        String::from_utf8(v).unwrap()
    }

    fn esc(s: &[u8], ascii: bool, slash: bool) -> Result<String, EscapeError> {
        let mut v = Vec::new();
        escape_string(s, ascii, slash, &mut v).map(|()| String::from_utf8(v).unwrap())
    }

    use crate::xorshift as next;

    #[test]
    fn fast_escape_finds_a_special_byte_at_every_offset() {
        // Past 64 bytes too: the AVX2 loop's 32-byte blocks, its 16-byte step and the tail.
        for len in 0..140 {
            for at in 0..=len {
                let specials = [
                    None,
                    Some(b'"'),
                    Some(b'\\'),
                    Some(b'\n'),
                    Some(b'/'),
                    Some(0),
                    Some(0x1f),
                ];
                for (special, filler) in specials.into_iter().flat_map(|c| [(c, b'a'), (c, 0x7f)]) {
                    let mut s = vec![filler; len];
                    if let (Some(c), true) = (special, at < len) {
                        s[at] = c;
                    }
                    for slash in [false, true] {
                        let mut fast = Vec::new();
                        escape_valid_utf8(&s, slash, &mut fast);
                        let mut checked = Vec::new();
                        escape_checked(&s, false, slash, &mut checked).unwrap();
                        assert_eq!(fast, checked, "{len} {at} {special:?} {slash}");
                        let mut quoted = b"x".to_vec();
                        quote_valid_utf8(&s, slash, &mut quoted);
                        let expected = [&b"x\""[..], &checked, b"\""].concat();
                        assert_eq!(quoted, expected, "{len} {at} {special:?} {slash}");
                    }
                }
            }
        }
    }

    #[test]
    fn fast_escape_matches_the_checked_one() {
        let pieces: [&str; 12] = [
            "a",
            "plain text ",
            "\"",
            "\\",
            "/",
            "\n",
            "\u{1}",
            "\u{1f}",
            "é",
            "東京",
            "\u{1F600}",
            "\u{7f}",
        ];
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..5000 {
            let n = next(&mut seed) % 24;
            let s: String = (0..n)
                .map(|_| pieces[(next(&mut seed) % pieces.len() as u64) as usize])
                .collect();
            for slash in [false, true] {
                let mut fast = Vec::new();
                escape_valid_utf8(s.as_bytes(), slash, &mut fast);
                let mut checked = Vec::new();
                escape_checked(s.as_bytes(), false, slash, &mut checked).unwrap();
                assert_eq!(fast, checked, "{s:?}");
                let mut quoted = Vec::new();
                quote_valid_utf8(s.as_bytes(), slash, &mut quoted);
                assert_eq!(quoted, [&b"\""[..], &checked, b"\""].concat(), "{s:?}");
            }
        }
    }

    #[test]
    fn push_bytes_appends_every_length() {
        let source: Vec<u8> = (0..40u8).collect();
        for start in 0..3 {
            for n in 0..=34 {
                let mut out = b"head".to_vec();
                push_bytes(&mut out, &source[start..start + n]);
                assert_eq!(&out[..4], b"head");
                assert_eq!(&out[4..], &source[start..start + n]);
            }
        }
    }

    #[test]
    fn integers_as_to_s_writes_them() {
        for n in [
            0,
            -1,
            9,
            10,
            -10,
            99,
            100,
            999,
            1000,
            99_999_999,
            100_000_000,
            -100_000_001,
            9_999_999_999_999_999,
            10_000_000_000_000_000,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            let mut out = b"x".to_vec();
            write_i64(n, &mut out);
            assert_eq!(out, format!("x{n}").as_bytes());
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..100_000 {
            let n = (next(&mut seed) as i64) >> (i % 64);
            let mut out = Vec::new();
            write_i64(n, &mut out);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    #[test]
    fn decimal_digits_at_every_power_of_ten_and_power_of_two() {
        let mut edges = vec![0u32, u32::MAX];
        for k in 0..32 {
            edges.extend([(1u32 << k) - 1, 1 << k, (1u32 << k).saturating_add(1)]);
        }
        let mut power = 1u32;
        while let Some(next) = power.checked_mul(10) {
            edges.extend([power - 1, power, power + 1, next - 1]);
            power = next;
        }
        edges.extend([power - 1, power, power + 1]);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        edges.extend((0..100_000).map(|i| (next(&mut seed) >> (32 + i % 32)) as u32));
        for x in edges {
            assert_eq!(decimal_digits(x), x.to_string().len(), "{x}");
            for n in [x as i64, -(x as i64)] {
                let mut out = b"x".to_vec();
                write_i64(n, &mut out);
                assert_eq!(out, format!("x{n}").as_bytes());
            }
        }
    }

    // The ties are written exactly (x.25, x.625): their shortest text is what is tested.
    #[allow(clippy::excessive_precision)]
    #[test]
    fn zmij_text_copied_only_where_ruby_writes_the_same() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut checked = 0;
        // The doubles around each edge of `renders_as_ruby`'s range and of Żmij's and
        // Ruby's fixed notation, a few hundred steps either way.
        let edges = [1e-5, 1e-4, 1e-3, 1e15, 1e16];
        let near_edges = edges.iter().flat_map(|&e: &f64| {
            (-300i64..=300).map(move |step| f64::from_bits((e.to_bits() as i64 + step) as u64))
        });
        let random = (0..300_000).map(|i| {
            let r = next(&mut seed);
            match i % 4 {
                0 => f64::from_bits(r),
                // Decimal-looking values across Ruby's notation boundaries.
                1 => (r % 100_000_000) as f64 / 10f64.powi((r >> 40) as i32 % 24 - 4),
                // Short binary fractions, among them ties between two shortest candidates.
                2 => (r >> 12) as f64 / 2f64.powi(1 + (r % 27) as i32),
                _ => (r >> 11) as f64 * 10f64.powi((r % 40) as i32 - 30),
            }
        });
        for f in near_edges.chain(random).flat_map(|f| [f, -f]) {
            if !f.is_finite() {
                continue;
            }
            let mut buffer = zmij::Buffer::new();
            let text = buffer.format_finite(f).as_bytes();
            if !renders_as_ruby(f) {
                continue;
            }
            let mut general = Vec::new();
            write_f64_from_text(text, &mut general);
            assert_eq!(text, &general[..], "{f:?}");
            checked += 1;
        }
        assert!(checked > 50_000, "{checked}");
    }

    #[test]
    // The literals spell out exact ties on purpose.
    #[allow(clippy::excessive_precision)]
    fn floats_as_ruby_writes_them() {
        for (f, s) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (1.5, "1.5"),
            (100.0, "100.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1.0e-05"),
            (1e15, "1.0e+15"),
            (1e14, "100000000000000.0"),
            (999999999999999.9, "999999999999999.9"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (1e16, "1.0e+16"),
            (1.2345e16, "1.2345e+16"),
            (9007199254740993.0, "9.007199254740992e+15"),
            (1099179060904402.1, "1099179060904402.1"),
            (803454914788320.25, "803454914788320.2"),
            (-271628451534276.625, "-271628451534276.62"),
            (1e100, "1.0e+100"),
            (5e-324, "5.0e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123.456, "123.456"),
            (0.30000000000000004, "0.30000000000000004"),
            (-2.5e-7, "-2.5e-07"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(float(f), s, "{f:?}");
        }
    }

    #[test]
    fn integers() {
        let mut v = Vec::new();
        write_i64(i64::MIN, &mut v);
        v.push(b' ');
        write_i64(0, &mut v);
        v.push(b' ');
        write_i64(4611686018427387903, &mut v);
        assert_eq!(v, b"-9223372036854775808 0 4611686018427387903");
    }

    #[test]
    fn escapes() {
        assert_eq!(
            esc(b"a\"b\\c\n\x01/", false, false).unwrap(),
            "a\\\"b\\\\c\\n\\u0001/"
        );
        assert_eq!(esc(b"/", false, true).unwrap(), "\\/");
        assert_eq!(esc("é😀".as_bytes(), false, false).unwrap(), "é😀");
        assert_eq!(
            esc("é😀\u{7f}".as_bytes(), true, false).unwrap(),
            "\\u00e9\\ud83d\\ude00\u{7f}"
        );
        assert_eq!(esc(b"\xff", false, false), Err(EscapeError::Partial));
        assert_eq!(esc(b"\xe9t\xe9", false, false), Err(EscapeError::Malformed));
        assert_eq!(
            esc(b"\xed\xa0\x80", true, false),
            Err(EscapeError::Malformed)
        );
        assert_eq!(esc(b"\x80", false, false), Err(EscapeError::Malformed));
        assert_eq!(esc(b"\xc0\x80", false, false), Err(EscapeError::Malformed));
    }
}
