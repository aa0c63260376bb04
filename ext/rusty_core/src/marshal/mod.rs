//! Byte-level pieces of Ruby's Marshal format 4.8 that need no Ruby VM.
//!
//! - [`write_long`] / [`Reader::read_long`]: MRI's variable-length integer (`w_long` /
//!   `r_long` in marshal.c).
//! - [`write_float_body`] / [`parse_float`]: the text MRI writes for a `Float` (shortest
//!   round-trip digits laid out by MRI's exponent rule) and a strict reader for that text.
//! - [`fixnum_fits_i`]: whether an Integer is written as `i` or as an `l` bignum.
//! - [`bignum_shorts`]: the 16-bit little-endian digits of a 64-bit magnitude.
//! - [`flush_points`]: where MRI writes a dump to an IO port in chunks.
//! - [`port_reader`]: the calls MRI makes to read a dump from an IO port.
//! - [`vet`]: whether a dump loads only what `safe_load` permits, before anything loads.
//!
//! The binding crate walks Ruby objects; everything that only shuffles bytes lives here
//! so that it is covered by `cargo test`.

mod flush_points;
pub mod port_reader;
#[cfg(test)]
mod tests;
pub mod vet;

pub use flush_points::flush_points;

/// Format version bytes every dump starts with.
pub const MAJOR: u8 = 4;
pub const MINOR: u8 = 8;

pub const TYPE_NIL: u8 = b'0';
pub const TYPE_TRUE: u8 = b'T';
pub const TYPE_FALSE: u8 = b'F';
pub const TYPE_FIXNUM: u8 = b'i';
pub const TYPE_FLOAT: u8 = b'f';
pub const TYPE_BIGNUM: u8 = b'l';
pub const TYPE_STRING: u8 = b'"';
pub const TYPE_ARRAY: u8 = b'[';
pub const TYPE_HASH: u8 = b'{';
pub const TYPE_HASH_DEF: u8 = b'}';
pub const TYPE_SYMBOL: u8 = b':';
pub const TYPE_SYMLINK: u8 = b';';
pub const TYPE_IVAR: u8 = b'I';
pub const TYPE_OBJECT: u8 = b'o';
pub const TYPE_USERDEF: u8 = b'u';
pub const TYPE_USRMARSHAL: u8 = b'U';
pub const TYPE_REGEXP: u8 = b'/';
pub const TYPE_EXTENDED: u8 = b'e';
pub const TYPE_DATA: u8 = b'd';
pub const TYPE_STRUCT: u8 = b'S';
pub const TYPE_CLASS: u8 = b'c';
pub const TYPE_MODULE: u8 = b'm';
pub const TYPE_LINK: u8 = b'@';
pub const TYPE_UCLASS: u8 = b'C';

/// Whether MRI (64-bit) writes the Integer `n` as a fixnum `i` record.
///
/// MRI tests the *tagged* VALUE (`2n+1`) against 31 bits, so the `i` range is 30-bit
/// signed: -2**30 ..= 2**30-1. Everything else is written as an `l` bignum.
#[inline]
pub fn fixnum_fits_i(n: i64) -> bool {
    (-(1i64 << 30)..(1i64 << 30)).contains(&n)
}

/// Appends MRI's `w_long` encoding of `x`. `x` must fit in 32 bits signed (MRI raises
/// "long too big to dump" otherwise; callers never pass such values).
#[inline]
pub fn write_long(out: &mut Vec<u8>, x: i64) {
    debug_assert!((i32::MIN as i64..=i32::MAX as i64).contains(&x));
    if x == 0 {
        out.push(0);
    } else if 0 < x && x < 123 {
        out.push((x + 5) as u8);
    } else if -124 < x && x < 0 {
        out.push(((x - 5) & 0xff) as u8);
    } else {
        let mut buf = [0u8; 9];
        let mut v = x;
        let mut i = 1;
        while i < 9 {
            buf[i] = (v & 0xff) as u8;
            v >>= 8;
            if v == 0 {
                buf[0] = i as u8;
                break;
            }
            if v == -1 {
                buf[0] = (-(i as i8)) as u8;
                break;
            }
            i += 1;
        }
        out.extend_from_slice(&buf[..=i]);
    }
}

/// Appends a length-prefixed byte string (MRI's `w_bytes`).
#[inline]
pub fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_long(out, bytes.len() as i64);
    out.extend_from_slice(bytes);
}

/// The 16-bit digits (as little-endian bytes) of a non-zero magnitude, as MRI writes a
/// fixnum outside the `i` range: the length in shorts is the fewest that hold it.
pub fn bignum_shorts(mut magnitude: u64) -> ([u8; 8], usize) {
    let mut buf = [0u8; 8];
    let mut shorts = 0;
    while magnitude != 0 {
        buf[shorts * 2] = (magnitude & 0xff) as u8;
        buf[shorts * 2 + 1] = ((magnitude >> 8) & 0xff) as u8;
        magnitude >>= 16;
        shorts += 1;
    }
    (buf, shorts)
}

/// Appends the body of an `f` record (length-prefixed text) exactly as MRI's `w_float`.
pub fn write_float_body(out: &mut Vec<u8>, d: f64) {
    let mut text = [0u8; 40];
    let len = float_text(d, &mut text);
    write_bytes(out, &text[..len]);
}

/// MRI's text for `d`: "nan", "inf", "-inf", "0", "-0", or the shortest round-trip
/// digits laid out as `w_float` does (plain when -4 < exponent <= digits, else `d.ddde-N`).
/// Returns the length written into `buf`.
pub fn float_text(d: f64, buf: &mut [u8; 40]) -> usize {
    let put = |buf: &mut [u8; 40], s: &[u8]| {
        buf[..s.len()].copy_from_slice(s);
        s.len()
    };
    if d.is_nan() {
        return put(buf, b"nan");
    }
    if d.is_infinite() {
        return put(buf, if d < 0.0 { b"-inf" } else { b"inf" });
    }
    if d == 0.0 {
        return put(buf, if d.is_sign_negative() { b"-0" } else { b"0" });
    }
    let shortest = crate::dtoa::shortest(d.abs());
    let (digits, decpt) = (shortest.digits(), shortest.decpt);
    let ndigits = digits.len();
    let digs = ndigits as i32;
    let mut len = 0;
    let mut push = |buf: &mut [u8; 40], b: u8| {
        buf[len] = b;
        len += 1;
    };
    if d < 0.0 {
        push(buf, b'-');
    }
    if decpt < -3 || decpt > digs {
        push(buf, digits[0]);
        if digs > 1 {
            push(buf, b'.');
            for &c in &digits[1..] {
                push(buf, c);
            }
        }
        push(buf, b'e');
        let mut exp = decpt - 1;
        if exp < 0 {
            push(buf, b'-');
            exp = -exp;
        }
        let mut tmp = [0u8; 4];
        let mut n = 0;
        loop {
            tmp[n] = b'0' + (exp % 10) as u8;
            n += 1;
            exp /= 10;
            if exp == 0 {
                break;
            }
        }
        for i in (0..n).rev() {
            push(buf, tmp[i]);
        }
    } else if decpt > 0 {
        let whole = decpt as usize;
        for &c in &digits[..whole] {
            push(buf, c);
        }
        if ndigits > whole {
            push(buf, b'.');
            for &c in &digits[whole..] {
                push(buf, c);
            }
        }
    } else {
        push(buf, b'0');
        push(buf, b'.');
        for _ in 0..(-decpt) {
            push(buf, b'0');
        }
        for &c in digits {
            push(buf, c);
        }
    }
    len
}

/// Reads the text of an `f` record, accepting only what MRI's writer produces: "nan",
/// "inf", "-inf", or `-?D+(.D+)?(e-?D+)?` with at most 17 significant digits and a small
/// exponent. Anything else (old binary-mantissa floats, hex, spaces, NULs, very long digit
/// strings) returns `None`, and the caller hands the whole load to the stdlib.
pub fn parse_float(text: &[u8]) -> Option<f64> {
    match text {
        b"nan" => return Some(f64::NAN),
        b"inf" => return Some(f64::INFINITY),
        b"-inf" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    if text.is_empty() || text.len() > 32 {
        return None;
    }
    let mut i = 0;
    if text[0] == b'-' {
        i = 1;
    }
    let digits_start = i;
    let mut significant = 0;
    let mut seen_nonzero = false;
    let mut count_digit = |c: u8| {
        if c != b'0' {
            seen_nonzero = true;
        }
        if seen_nonzero {
            significant += 1;
        }
    };
    while i < text.len() && text[i].is_ascii_digit() {
        count_digit(text[i]);
        i += 1;
    }
    if i == digits_start {
        return None;
    }
    if i < text.len() && text[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < text.len() && text[i].is_ascii_digit() {
            count_digit(text[i]);
            i += 1;
        }
        if i == frac_start {
            return None;
        }
    }
    if i < text.len() && text[i] == b'e' {
        i += 1;
        if i < text.len() && text[i] == b'-' {
            i += 1;
        }
        let exp_start = i;
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start || i - exp_start > 3 {
            return None;
        }
    }
    if i != text.len() || significant > 17 {
        return None;
    }
    // Only ASCII digits, '-', '.', 'e' remain (checked above), so this is valid UTF-8.
    let text = unsafe { std::str::from_utf8_unchecked(text) };
    text.parse::<f64>().ok()
}

/// MRI's Ruby 1.8 compatibility step for a Regexp source read without an encoding ivar
/// (`r_object` for TYPE_REGEXP): a backslash escaping one of the letters Ruby 1.8 did not
/// define as an escape is removed (an odd run of backslashes loses its last one).
pub fn strip_18_escapes(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    let mut backslashes = 0usize;
    for &c in src {
        match c {
            b'\\' => backslashes += 1,
            b'g' | b'h' | b'i' | b'j' | b'k' | b'l' | b'm' | b'o' | b'p' | b'q' | b'u' | b'y'
            | b'E' | b'F' | b'H' | b'I' | b'J' | b'K' | b'L' | b'N' | b'O' | b'P' | b'Q' | b'R'
            | b'S' | b'T' | b'U' | b'V' | b'X' | b'Y' => {
                if backslashes % 2 == 1 {
                    out.pop();
                }
                backslashes = 0;
            }
            _ => backslashes = 0,
        }
        out.push(c);
    }
    out
}

/// Splits a class path "A::B" into its names; `None` marks a malformed piece ("A:B",
/// "A::", "::A").
pub fn split_class_path(path: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    let mut rest = Some(path);
    std::iter::from_fn(move || {
        let p = rest?;
        match p.iter().position(|&b| b == b':') {
            None => {
                rest = None;
                Some((!p.is_empty()).then_some(p))
            }
            Some(i) => {
                if p.get(i + 1) != Some(&b':') || i == 0 {
                    rest = None;
                    return Some(None);
                }
                rest = Some(&p[i + 2..]);
                Some(Some(&p[..i]))
            }
        }
    })
}

/// A cursor over a dump. Every read returns `None` at the end of the data.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The next byte, not consumed.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    #[inline]
    pub fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline]
    pub fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
        if self.remaining() < len {
            return None;
        }
        let s = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Some(s)
    }

    /// MRI's `r_long`.
    #[inline]
    pub fn read_long(&mut self) -> Option<i64> {
        let c = self.byte()? as i8 as i64;
        if c == 0 {
            return Some(0);
        }
        if c > 0 {
            if 4 < c {
                return Some(c - 5);
            }
            let mut x: i64 = 0;
            for i in 0..c {
                x |= (self.byte()? as i64) << (8 * i);
            }
            Some(x)
        } else {
            if c < -4 {
                return Some(c + 5);
            }
            let n = -c;
            let mut x: i64 = -1;
            for i in 0..n {
                x &= !(0xffi64 << (8 * i));
                x |= (self.byte()? as i64) << (8 * i);
            }
            Some(x)
        }
    }

    /// A length-prefixed byte string (MRI's `r_bytes`); `None` for a negative length or
    /// too little data.
    #[inline]
    pub fn read_bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.read_long()?;
        if len < 0 {
            return None;
        }
        self.bytes(len as usize)
    }
}
