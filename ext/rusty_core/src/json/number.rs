//! Numbers: the C parser's `JSON_float` and `JSON_integer` machines, and fast conversions
//! for the common cases (the binding falls back to Ruby's own conversion for the rest).

use super::lemire;

/// A float literal's value as the scan read it, `±mantissa * 10^exponent`, so that the
/// conversion need not read the digits again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    pub negative: bool,
    /// Mantissa digits (integer part and fraction, leading zeros included): at most 17
    /// and [`parse_float_fast`] may convert it.
    pub digits: usize,
    /// The mantissa digits as an integer; exact while `digits` <= 19 (wrapped beyond).
    pub mantissa: u64,
    /// The exponent minus the count of fraction digits; `None` for an exponent of more
    /// than six digits (too far out to bother: Ruby's strtod decides).
    pub exponent: Option<i64>,
}

/// What the number machines make of the bytes at a `-` or a digit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberScan {
    /// A float literal ending before `end`, and its value.
    Float(usize, Decimal),
    /// An integer literal ending before `end`, and its value when it has at most 18
    /// digits (always a Fixnum).
    Integer(usize, Option<i64>),
    /// Neither machine accepts it; the value is empty and the caller fails at `start`.
    Invalid,
}

#[inline(always)]
fn digit_at(src: &[u8], p: usize) -> bool {
    matches!(src.get(p), Some(b'0'..=b'9'))
}

/// The first byte at or after `p` that is not an ASCII digit (or the end), eight bytes
/// at a time.
#[inline(always)]
fn skip_digits(src: &[u8], mut p: usize) -> usize {
    while p + 8 <= src.len() {
        let word = u64::from_le_bytes(src[p..p + 8].try_into().unwrap());
        let others = non_digits(word);
        if others != 0 {
            return p + (others.trailing_zeros() / 8) as usize;
        }
        p += 8;
    }
    while digit_at(src, p) {
        p += 1;
    }
    p
}

/// A mask whose lowest set bit lies in the first (lowest-addressed) byte of `word` that is
/// not an ASCII digit; 0 when all eight are digits. A digit is 0x30..=0x39: its high
/// nibble is 3, and adding 6 keeps it 3. Adding 6 can carry into the next byte only from a
/// byte >= 0xFA, itself no digit, so the first non-digit is always found.
#[inline(always)]
fn non_digits(word: u64) -> u64 {
    const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    const SIXES: u64 = 0x0606_0606_0606_0606;
    ((word & HIGH_NIBBLES) ^ THREES) | ((word.wrapping_add(SIXES) & HIGH_NIBBLES) ^ THREES)
}

/// Runs json 2.6's float machine, then its integer machine, at `start`, reading the
/// digits' value on the way.
#[inline]
pub fn scan_number(src: &[u8], start: usize) -> NumberScan {
    let negative = src.get(start) == Some(&b'-');
    let first = start + negative as usize;
    // `'-'? ('0' | [1-9][0-9]*)`
    let (mantissa, int_end) = match src.get(first) {
        Some(b'0') => (0, first + 1),
        Some(b'1'..=b'9') => read_digits(src, first, 0),
        _ => return NumberScan::Invalid,
    };
    let int_digits = int_end - first;
    if let Some((end, mantissa, fraction_digits, exponent)) = float_tail(src, int_end, mantissa) {
        // The float must not be followed by any of [0-9Ee.-].
        match src.get(end) {
            Some(b'0'..=b'9' | b'E' | b'e' | b'.' | b'-') => {}
            _ => {
                let exponent = exponent.map(|e| e - fraction_digits as i64);
                return NumberScan::Float(
                    end,
                    Decimal {
                        negative,
                        digits: int_digits + fraction_digits,
                        mantissa,
                        exponent,
                    },
                );
            }
        }
    }
    if digit_at(src, int_end) {
        // "01": the integer machine wants a non-digit after a leading zero.
        return NumberScan::Invalid;
    }
    let value = (int_digits <= 18).then(|| {
        let magnitude = mantissa as i64;
        if negative {
            -magnitude
        } else {
            magnitude
        }
    });
    NumberScan::Integer(int_end, value)
}

/// `'.' [0-9]+ ([Ee] [+-]? [0-9]+)? | [Ee] [+-]? [0-9]+` after the integer part (whose
/// digits' value is `mantissa`): its end, the mantissa with the fraction's digits, how
/// many fraction digits there are, and the exponent (0 without one; `None` when it has
/// more than six digits).
#[inline(always)]
fn float_tail(
    src: &[u8],
    int_end: usize,
    mut mantissa: u64,
) -> Option<(usize, u64, usize, Option<i64>)> {
    let mut p = int_end;
    let mut fraction_digits = 0;
    if src.get(p) == Some(&b'.') {
        if !digit_at(src, p + 1) {
            return None;
        }
        (mantissa, p) = read_digits(src, p + 1, mantissa);
        fraction_digits = p - int_end - 1;
        if !matches!(src.get(p), Some(b'e' | b'E')) {
            return Some((p, mantissa, fraction_digits, Some(0)));
        }
    } else if !matches!(src.get(p), Some(b'e' | b'E')) {
        return None;
    }
    p += 1; // the E
    let exp_negative = src.get(p) == Some(&b'-');
    if matches!(src.get(p), Some(b'+' | b'-')) {
        p += 1;
    }
    if !digit_at(src, p) {
        return None;
    }
    let end = skip_digits(src, p);
    let exponent = (end - p <= 6).then(|| {
        let e = src[p..end]
            .iter()
            .fold(0i64, |e, &d| e * 10 + (d - b'0') as i64);
        if exp_negative {
            -e
        } else {
            e
        }
    });
    Some((end, mantissa, fraction_digits, exponent))
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

/// A float literal ([`NumberScan::Float`]'s text and value) converted exactly as Ruby's
/// `strtod` does, for literals where that is certain: at most 17 mantissa digits and a
/// normal, finite result. `None` otherwise (the binding then asks Ruby, which also prints
/// its "out of range" warnings).
#[inline]
pub fn parse_float_fast(text: &[u8], decimal: &Decimal) -> Option<f64> {
    if decimal.digits > 17 {
        return None;
    }
    if let Some(q) = decimal.exponent {
        let w = decimal.mantissa;
        let magnitude = if w == 0 {
            Some(0.0)
        } else if w <= 1 << 53 && (-22..=22).contains(&q) {
            // Both w and 10^|q| are exact doubles: one IEEE operation rounds correctly.
            let w = w as f64;
            Some(if q < 0 {
                w / POWERS_OF_TEN[(-q) as usize]
            } else {
                w * POWERS_OF_TEN[q as usize]
            })
        } else {
            lemire::to_f64_bits(w, q).map(f64::from_bits)
        };
        if let Some(m) = magnitude {
            return Some(if decimal.negative { -m } else { m });
        }
    }
    parse_float_std(text)
}

/// 10^0 to 10^22, the powers of ten a double holds exactly.
const POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Reads the digit run at `p` onto `w` (as `w` followed by those digits, wrapping
/// beyond 19 digits, where callers no longer use the value): the new value and the run's
/// end. Eight digits at a time while whole words are digits, then the last few from one
/// more word, padded with leading zeros, so a run's end costs no per-byte branches.
#[inline(always)]
pub(in crate::json) fn read_digits(text: &[u8], mut p: usize, mut w: u64) -> (u64, usize) {
    while p + 8 <= text.len() {
        let word = u64::from_le_bytes(text[p..p + 8].try_into().unwrap());
        let others = non_digits(word);
        if others != 0 {
            // The first `k` bytes (0..=7) are digits: shift them to the top and fill
            // the bytes below with '0's.
            let k = (others.trailing_zeros() / 8) as usize;
            if k > 0 {
                let padded = (word << (8 * (8 - k))) | (ZEROS >> (8 * k));
                w = w
                    .wrapping_mul(POWERS_OF_TEN_U64[k])
                    .wrapping_add(eight_digits(padded));
            }
            return (w, p + k);
        }
        w = w.wrapping_mul(100_000_000).wrapping_add(eight_digits(word));
        p += 8;
    }
    while let Some(&d) = text.get(p) {
        if !d.is_ascii_digit() {
            break;
        }
        w = w.wrapping_mul(10).wrapping_add((d - b'0') as u64);
        p += 1;
    }
    (w, p)
}

/// Eight ASCII '0's.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// 10^0 to 10^7.
const POWERS_OF_TEN_U64: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// The value of eight ASCII digits read as a little-endian word, with three
/// multiplications (the digit-pair trick Rust's float parser uses).
#[inline(always)]
fn eight_digits(word: u64) -> u64 {
    const MASK: u64 = 0x0000_00FF_0000_00FF;
    const MUL1: u64 = 0x000F_4240_0000_0064; // 100 + (1000000 << 32)
    const MUL2: u64 = 0x0000_2710_0000_0001; // 1 + (10000 << 32)
    let v = word - 0x3030_3030_3030_3030;
    let v = v * 10 + (v >> 8); // pairs of digits
    let v1 = (v & MASK).wrapping_mul(MUL1);
    let v2 = ((v >> 16) & MASK).wrapping_mul(MUL2);
    (v1.wrapping_add(v2) >> 32) as u32 as u64
}

/// Rust's own (correctly rounded) conversion, for what [`lemire`] leaves undecided,
/// with the same limits: no underflow, no overflow, no subnormals.
#[cold]
fn parse_float_std(text: &[u8]) -> Option<f64> {
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
