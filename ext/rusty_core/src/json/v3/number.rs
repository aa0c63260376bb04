//! json 3.x's number scan (`json_parse_number`) and its choice of conversion.

// A digit run's value appended to an accumulator (wrapping), and the run's end.
use super::super::number::read_digits as digits;

/// A number literal as json 3.x reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Number {
    /// Where the literal ends.
    pub end: usize,
    pub negative: bool,
    /// No fraction and no exponent.
    pub integer: bool,
    /// The mantissa's digits (integer part and fraction, leading zeros included) as an
    /// integer, wrapping beyond 19 digits (where it is no longer used).
    pub mantissa: u64,
    pub digits: usize,
    /// The exponent less the count of fraction digits, as json 3.1.0 computes it: an
    /// exponent beyond `i64` (20 or more digits, or above `i64::MAX`) counts as
    /// `i32::MAX` / `i32::MIN`, and the subtraction wraps (so `0.05e-9223372036854775807`
    /// is infinite there, and here).
    pub exponent: i64,
}

/// Reads the number whose digits start at `p` (after its `-`, if `negative`). When json
/// rejects it (no digits, a leading zero followed by digits, a `.` or an exponent without
/// digits), `Err` with where its scan stopped. What follows the number is not looked at.
#[inline(always)]
pub(super) fn scan(src: &[u8], p: usize, negative: bool) -> Result<Number, usize> {
    let first = src.get(p).copied();
    let (mut mantissa, mut q) = digits(src, p, 0);
    let mut count = q - p;
    if (first == Some(b'0') && count > 1) || count == 0 {
        return Err(q);
    }
    let mut integer = true;
    let mut point = None;
    if src.get(q) == Some(&b'.') {
        integer = false;
        point = Some(count);
        let start = q + 1;
        (mantissa, q) = digits(src, start, mantissa);
        if q == start {
            return Err(q);
        }
        count += q - start;
    }
    let mut exponent: i64 = 0;
    if matches!(src.get(q), Some(b'e' | b'E')) {
        integer = false;
        q += 1;
        let negative_exponent = src.get(q) == Some(&b'-');
        if matches!(src.get(q), Some(b'+' | b'-')) {
            q += 1;
        }
        let start = q;
        let (magnitude, end) = digits(src, start, 0);
        q = end;
        let len = end - start;
        if len == 0 {
            return Err(q);
        }
        exponent = if len >= 20 || magnitude > i64::MAX as u64 {
            if negative_exponent {
                i32::MIN as i64
            } else {
                i32::MAX as i64
            }
        } else if negative_exponent {
            -(magnitude as i64)
        } else {
            magnitude as i64
        };
    }
    if let Some(point) = point {
        exponent = exponent.wrapping_sub((count - point) as i64);
    }
    Ok(Number {
        end: q,
        negative,
        integer,
        mantissa,
        digits: count,
        exponent,
    })
}

/// An integer of at most 18 digits (always a Fixnum) is made from the scan's value;
/// longer ones by Ruby from the text (`None`). json 3.1.0 hands 18-digit ones to Ruby too,
/// for the same Integer: twitter.json's ids are such, and each cost a call into Ruby.
#[inline(always)]
pub(super) fn integer_value(n: &Number) -> Option<i64> {
    (n.digits <= 18).then(|| {
        let m = n.mantissa as i64;
        if n.negative {
            -m
        } else {
            m
        }
    })
}

/// json 3.x's `json_decode_float`: the value where json computes it itself, `None` where
/// it has Ruby's `strtod` convert the text (which may warn "Float ... out of range").
#[inline(always)]
pub(super) fn float_value(n: &Number) -> Option<f64> {
    let signed = |m: f64| if n.negative { -m } else { m };
    if n.exponent >= i32::MAX as i64 {
        return Some(signed(f64::INFINITY));
    }
    if n.exponent < i32::MIN as i64 {
        return Some(signed(0.0));
    }
    let magnitude = n.digits as i64 + n.exponent;
    if n.digits > 18 || magnitude < -307 {
        if magnitude < -324 {
            return Some(signed(0.0));
        }
        return None;
    }
    Some(signed(exact(n.mantissa, n.exponent)))
}

/// `w * 10^q` correctly rounded, as json's fast_float port (`ffp_s2d`) gives it: zero,
/// infinity beyond its table of powers, else the nearest double (which any correct
/// conversion agrees on). The literal's own text may say otherwise: its exponent may be
/// one json saturated.
#[inline(always)]
fn exact(w: u64, q: i64) -> f64 {
    if w == 0 || q < -342 {
        return 0.0;
    }
    if q > 308 {
        return f64::INFINITY;
    }
    if w <= 1 << 53 && (-22..=22).contains(&q) {
        let w = w as f64;
        return if q < 0 {
            w / POWERS_OF_TEN[(-q) as usize]
        } else {
            w * POWERS_OF_TEN[q as usize]
        };
    }
    if let Some(bits) = super::super::lemire::to_f64_bits(w, q) {
        return f64::from_bits(bits);
    }
    slow(w, q)
}

/// Rust's own correctly rounded conversion of `w * 10^q`, for what the faster ways leave
/// (subnormals, overflow, undecided halfway cases).
#[cold]
fn slow(w: u64, q: i64) -> f64 {
    format!("{w}e{q}").parse::<f64>().unwrap_or(f64::NAN)
}

const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];
