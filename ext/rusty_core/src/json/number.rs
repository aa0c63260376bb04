//! Numbers: the C parser's `JSON_float` and `JSON_integer` machines, and fast conversions
//! for the common cases (the binding falls back to Ruby's own conversion for the rest).

/// What the number machines make of the bytes at a `-` or a digit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberScan {
    /// A float literal ending before `end`, with this many mantissa digits (before any
    /// exponent), which decides whether [`parse_float_fast`] may convert it.
    Float(usize, usize),
    /// An integer literal ending before `end`.
    Integer(usize),
    /// Neither machine accepts it; the value is empty and the caller fails at `start`.
    Invalid,
}

#[inline(always)]
fn digit_at(src: &[u8], p: usize) -> bool {
    matches!(src.get(p), Some(b'0'..=b'9'))
}

#[inline(always)]
fn skip_digits(src: &[u8], mut p: usize) -> usize {
    while digit_at(src, p) {
        p += 1;
    }
    p
}

/// `'-'? ('0' | [1-9][0-9]*)`: the end of the integer part, or `None`.
#[inline(always)]
fn int_part(src: &[u8], start: usize) -> Option<usize> {
    let mut p = start;
    if src.get(p) == Some(&b'-') {
        p += 1;
    }
    match src.get(p) {
        Some(b'0') => Some(p + 1),
        Some(b'1'..=b'9') => Some(skip_digits(src, p + 1)),
        _ => None,
    }
}

/// Runs json 2.6's float machine, then its integer machine, at `start`.
#[inline]
pub fn scan_number(src: &[u8], start: usize) -> NumberScan {
    let Some(int_end) = int_part(src, start) else {
        return NumberScan::Invalid;
    };
    if let Some((end, fraction_digits)) = float_tail(src, int_end) {
        // The float must not be followed by any of [0-9Ee.-].
        match src.get(end) {
            Some(b'0'..=b'9' | b'E' | b'e' | b'.' | b'-') => {}
            _ => {
                let int_digits = int_end - start - (src[start] == b'-') as usize;
                return NumberScan::Float(end, int_digits + fraction_digits);
            }
        }
    }
    if digit_at(src, int_end) {
        // "01": the integer machine wants a non-digit after a leading zero.
        return NumberScan::Invalid;
    }
    NumberScan::Integer(int_end)
}

/// `'.' [0-9]+ ([Ee] [+-]? [0-9]+)? | [Ee] [+-]? [0-9]+` after the integer part: its
/// end, and how many fraction digits it has.
#[inline(always)]
fn float_tail(src: &[u8], int_end: usize) -> Option<(usize, usize)> {
    let mut p = int_end;
    let mut fraction_digits = 0;
    if src.get(p) == Some(&b'.') {
        if !digit_at(src, p + 1) {
            return None;
        }
        p = skip_digits(src, p + 1);
        fraction_digits = p - int_end - 1;
        if !matches!(src.get(p), Some(b'e' | b'E')) {
            return Some((p, fraction_digits));
        }
    } else if !matches!(src.get(p), Some(b'e' | b'E')) {
        return None;
    }
    p += 1; // the E
    if matches!(src.get(p), Some(b'+' | b'-')) {
        p += 1;
    }
    if !digit_at(src, p) {
        return None;
    }
    Some((skip_digits(src, p), fraction_digits))
}

/// An integer literal of at most 18 digits (always a Fixnum), or `None`.
#[inline]
pub fn parse_int_fast(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        value = value * 10 + (d - b'0') as i64;
    }
    Some(if negative { -value } else { value })
}

/// A float literal ([`NumberScan::Float`]'s text and mantissa digit count) converted
/// exactly as Ruby's `strtod` does, for literals where that is certain: at most 17
/// mantissa digits and a normal, finite result. `None` otherwise (the binding then asks
/// Ruby, which also prints its "out of range" warnings).
#[inline]
pub fn parse_float_fast(text: &[u8], mantissa_digits: usize) -> Option<f64> {
    if mantissa_digits > 17 {
        return None;
    }
    // Rust's parser is correctly rounded (Eisel-Lemire, with an exact fallback), as Ruby's
    // strtod is for up to 17 digits (the fast-float2 crate measured no faster on canada).
    // SAFETY: the number machine only accepts ASCII.
    let s = unsafe { std::str::from_utf8_unchecked(text) };
    let value: f64 = s.parse().ok()?;
    if !value.is_finite() || (value != 0.0 && value.abs() < f64::MIN_POSITIVE) {
        return None;
    }
    if value == 0.0 && nonzero_mantissa(text) {
        // Underflow to zero ("1e-400"); "0e5" style inputs are still an exact zero.
        return None;
    }
    Some(value)
}

/// Whether a digit before the exponent is not 0.
#[cold]
fn nonzero_mantissa(text: &[u8]) -> bool {
    text.iter()
        .take_while(|&&b| b != b'e' && b != b'E')
        .any(|b| (b'1'..=b'9').contains(b))
}
