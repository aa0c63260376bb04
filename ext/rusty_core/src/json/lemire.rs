//! The Eisel-Lemire conversion of a decimal `w * 10^q` to the nearest `f64` (Lemire,
//! "Number Parsing at a Gigabyte per Second", 2021), as Rust's own `f64::from_str` runs it
//! after reading the digits. Ours takes the digits the number machine already found, so a
//! float literal is read once; where the algorithm cannot decide, the caller falls back
//! to `f64::from_str`.

use super::pow5_table::{LARGEST_POWER_OF_FIVE, POWER_OF_FIVE_128, SMALLEST_POWER_OF_FIVE};

const MANTISSA_EXPLICIT_BITS: i32 = 52;
const MINIMUM_EXPONENT: i32 = -1023;
const INFINITE_POWER: i32 = 0x7FF;
/// The decimal exponents where a product can fall exactly halfway between two floats.
const MIN_EXPONENT_ROUND_TO_EVEN: i64 = -4;
const MAX_EXPONENT_ROUND_TO_EVEN: i64 = 23;

/// `w * 10^q` (w != 0, exact) correctly rounded to a normal, finite `f64`'s bits without
/// the sign; `None` where the algorithm cannot decide or the result is zero, subnormal or
/// infinite (the caller's slower ways handle those).
#[inline]
pub fn to_f64_bits(w: u64, q: i64) -> Option<u64> {
    if w == 0 || !(SMALLEST_POWER_OF_FIVE..=LARGEST_POWER_OF_FIVE).contains(&q) {
        return None;
    }
    let lz = w.leading_zeros();
    let w = w << lz;
    let (lo, hi) = product_approx(q, w, MANTISSA_EXPLICIT_BITS as u32 + 3);
    if lo == u64::MAX && !(-27..=55).contains(&q) {
        // The 128-bit approximation of 5^q may be off by one in a way that matters.
        return None;
    }
    let upperbit = (hi >> 63) as i32;
    let shift = upperbit + 64 - MANTISSA_EXPLICIT_BITS - 3;
    let mut mantissa = hi >> shift;
    let mut power2 = power(q as i32) + upperbit - lz as i32 - MINIMUM_EXPONENT;
    if power2 <= 0 {
        return None; // subnormal or zero
    }
    // Exactly halfway between two floats: round to even (down) instead of up.
    if lo <= 1
        && (MIN_EXPONENT_ROUND_TO_EVEN..=MAX_EXPONENT_ROUND_TO_EVEN).contains(&q)
        && mantissa & 3 == 1
        && (mantissa << shift) == hi
    {
        mantissa &= !1;
    }
    mantissa += mantissa & 1;
    mantissa >>= 1;
    if mantissa >= (2u64 << MANTISSA_EXPLICIT_BITS) {
        // Rounding carried into a new bit.
        mantissa = 1u64 << MANTISSA_EXPLICIT_BITS;
        power2 += 1;
    }
    mantissa &= !(1u64 << MANTISSA_EXPLICIT_BITS);
    if power2 >= INFINITE_POWER {
        return None;
    }
    Some(mantissa | (power2 as u64) << MANTISSA_EXPLICIT_BITS)
}

/// floor(log2(10^q)) + 63, for q in the table's range.
#[inline(always)]
fn power(q: i32) -> i32 {
    (q.wrapping_mul(152_170 + 65536) >> 16) + 63
}

/// The high 128 bits of `w * 5^q`, to `precision` bits plus what decides the rounding.
#[inline(always)]
fn product_approx(q: i64, w: u64, precision: u32) -> (u64, u64) {
    let mask = u64::MAX >> precision;
    let (hi5, lo5) = POWER_OF_FIVE_128[(q - SMALLEST_POWER_OF_FIVE) as usize];
    let first = (w as u128) * (hi5 as u128);
    let (mut first_lo, mut first_hi) = (first as u64, (first >> 64) as u64);
    if first_hi & mask == mask {
        // Not enough bits yet: add the product with the low half of 5^q.
        let second_hi = (((w as u128) * (lo5 as u128)) >> 64) as u64;
        first_lo = first_lo.wrapping_add(second_hi);
        if second_hi > first_lo {
            first_hi += 1;
        }
    }
    (first_lo, first_hi)
}
