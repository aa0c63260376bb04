//! The byte-level half of JSON generation as json 2.6.1's C generator writes it: string
//! escaping (plain and `ascii_only`, with its UTF-8 checks and messages), integers, and
//! floats in exactly `Float#to_s`'s text.

use std::io::Write as _;

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

fn push_u_escape(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[(unit >> 12) as usize & 0xf],
        HEX[(unit >> 8) as usize & 0xf],
        HEX[(unit >> 4) as usize & 0xf],
        HEX[unit as usize & 0xf],
    ]);
}

fn push_ascii_escape(out: &mut Vec<u8>, c: u8) {
    match c {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x0c => out.extend_from_slice(b"\\f"),
        0x08 => out.extend_from_slice(b"\\b"),
        _ => push_u_escape(out, c as u32),
    }
}

/// Appends the contents of a JSON string (without quotes) for UTF-8 bytes `s`. With
/// `ascii_only` every non-ASCII character becomes `\uXXXX` (surrogate pairs above the BMP).
/// On error `out` may hold part of the string; callers discard it.
pub fn escape_string(
    s: &[u8],
    ascii_only: bool,
    escape_slash: bool,
    out: &mut Vec<u8>,
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

/// Appends `n` in decimal.
pub fn write_i64(n: i64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Appends a finite `f` exactly as Ruby's `Float#to_s` writes it: the shortest digits that
/// round-trip, fixed notation for decimal exponents -4 <= e < 15 (`100.0`, `0.0001`),
/// otherwise `d.ddde+XX` (at least two exponent digits), and always a fractional part.
/// Non-finite values are written as `NaN`, `Infinity`, `-Infinity`.
pub fn write_f64(f: f64, out: &mut Vec<u8>) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f < 0.0 { b"-Infinity" } else { b"Infinity" });
        return;
    }
    // `{:e}` is the shortest round-trip representation: "1.2345e-5", "-0e0".
    let mut buf = [0u8; 40];
    let len = {
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        let _ = write!(cursor, "{:e}", f);
        cursor.position() as usize
    };
    let text = &buf[..len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e_at = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let (mantissa, exp_text) = (&text[..e_at], &text[(e_at + 1).min(text.len())..]);
    let mut digits = [0u8; 24];
    let mut ndigits = 0;
    for &b in mantissa {
        if b != b'.' {
            digits[ndigits] = b;
            ndigits += 1;
        }
    }
    if let Some(even) = tie_to_even(f, &digits[..ndigits]) {
        let mut v = even;
        for slot in digits[..ndigits].iter_mut().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    let digits = &digits[..ndigits];
    let mut exp: i32 = 0;
    let (exp_neg, exp_digits) = match exp_text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, exp_text),
    };
    for &b in exp_digits {
        exp = exp * 10 + (b - b'0') as i32;
    }
    if exp_neg {
        exp = -exp;
    }
    // Ruby's decpt: value = 0.DIGITS * 10^decpt.
    let decpt = exp + 1;
    if negative {
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
            out.extend(std::iter::repeat_n(b'0', (decpt - nd) as usize));
            out.extend_from_slice(b".0");
        }
    } else if decpt <= 0 && decpt > -4 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
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

/// Ruby's dtoa breaks a tie between two shortest candidates towards the even one; Rust's
/// shortest formatting does not always. A tie needs the double's exact decimal expansion to
/// be one digit longer than the shortest digits and to end in 5, which is only possible for
/// doubles with a short exact expansion; those are computed exactly here (in u128). Returns
/// the digits to use instead of `digits` (as an integer of the same length) when they differ.
fn tie_to_even(f: f64, digits: &[u8]) -> Option<u64> {
    let bits = f.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if raw_exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), raw_exp - 1075)
    };
    if m == 0 {
        return None;
    }
    let shift = m.trailing_zeros() as i32;
    m >>= shift;
    e += shift;
    let exact: u128 = if e >= 0 {
        if e > 60 {
            return None;
        }
        (m as u128) << e
    } else {
        if e < -27 {
            return None;
        }
        (m as u128) * 5u128.pow((-e) as u32)
    };
    if exact % 10 != 5 {
        return None;
    }
    let len = exact.checked_ilog10().map_or(1, |l| l as usize + 1);
    if len != digits.len() + 1 {
        return None;
    }
    let lo = (exact / 10) as u64;
    let hi = lo + 1;
    if hi.checked_ilog10() != lo.checked_ilog10() {
        return None;
    }
    let current = digits
        .iter()
        .fold(0u64, |acc, &d| acc * 10 + (d - b'0') as u64);
    if current != lo && current != hi {
        return None;
    }
    let even = if lo.is_multiple_of(2) { lo } else { hi };
    (even != current).then_some(even)
}

#[cfg(test)]
mod tests {
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

    // The ties are written exactly (x.25, x.625): their shortest text is what is tested.
    #[allow(clippy::excessive_precision)]
    #[test]
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
