//! The shortest decimal digits of a double exactly as MRI's `ruby_dtoa` mode 0 gives them,
//! which `Float#to_s` (so the JSON generator) and Marshal's `w_float` lay out each in
//! their own way: Żmij's shortest round-trip digits, which are dtoa's, ties between two
//! shortest candidates included (both keep the even one; the tests check it).

/// The shortest digits of a finite double as dtoa mode 0 gives them:
/// `f = ±0.DIGITS × 10^decpt`, no leading or trailing zero digits (zero is the single
/// digit `0` with decpt 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortest {
    pub negative: bool,
    digits: [u8; 24],
    len: usize,
    pub decpt: i32,
}

impl Shortest {
    /// The ASCII digits.
    pub fn digits(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// [`Shortest`] of finite `f`.
pub fn shortest(f: f64) -> Shortest {
    let mut buffer = zmij::Buffer::new();
    from_shortest_text(buffer.format_finite(f).as_bytes())
}

/// [`Shortest`] from Żmij's rendering `text` of a finite double. Żmij's digits are dtoa's
/// as they stand, ties included: the tests check them against an independent oracle
/// corrected to dtoa's tie rule, on thousands of ties where that oracle alone keeps the
/// odd candidate.
pub fn from_shortest_text(text: &[u8]) -> Shortest {
    let mut digits = [0u8; 24];
    let (negative, len, decpt) = digits_of_text(text, &mut digits);
    Shortest {
        negative,
        digits,
        len,
        decpt,
    }
}

/// Reads any plain or scientific rendering of a finite number ("-0.0001", "1.5e-7",
/// "123.0", "1e16") as [`Shortest`]'s parts: `(negative, number of digits, decpt)`.
fn digits_of_text(text: &[u8], digits: &mut [u8; 24]) -> (bool, usize, i32) {
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e_at = text.iter().position(|&b| b == b'e' || b == b'E');
    let (mantissa, exp10) = match e_at {
        Some(at) => {
            let (neg, exp_digits) = match text[at + 1..].split_first() {
                Some((b'-', rest)) => (true, rest),
                Some((b'+', rest)) => (false, rest),
                _ => (false, &text[at + 1..]),
            };
            let e = exp_digits
                .iter()
                .fold(0i32, |acc, &b| acc * 10 + (b - b'0') as i32);
            (&text[..at], if neg { -e } else { e })
        }
        None => (text, 0),
    };
    let point = mantissa
        .iter()
        .position(|&b| b == b'.')
        .unwrap_or(mantissa.len()) as i32;
    let mut n = 0;
    let mut leading_zeros = 0i32;
    for &b in mantissa {
        if b == b'.' {
            continue;
        }
        if n == 0 && b == b'0' {
            // Each leading zero moves the first significant digit one place right.
            leading_zeros += 1;
            continue;
        }
        if n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    while n > 0 && digits[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        digits[0] = b'0';
        return (negative, 1, 1);
    }
    (negative, n, point - leading_zeros + exp10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ruby's dtoa breaks a tie between two shortest candidates towards the even one; Rust's
    /// shortest formatting does not always. A tie needs the double's exact decimal expansion to
    /// be one digit longer than the shortest digits and to end in 5, which is only possible for
    /// doubles with a short exact expansion; those are computed exactly here (in u128). Returns
    /// the digits to use instead of `digits` (as an integer of the same length) when they differ.
    pub(super) fn tie_to_even(f: f64, digits: &[u8]) -> Option<u64> {
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

    use crate::xorshift as next;

    /// The digits as Rust's own shortest formatting gives them (Grisu with a Dragon4
    /// fallback), what the JSON generator used before Ryu and Żmij: an independent oracle.
    fn reference_digits(f: f64) -> (bool, Vec<u8>, i32) {
        let mut digits = [0u8; 24];
        let (neg, n, decpt) = digits_of_text(format!("{f:e}").as_bytes(), &mut digits);
        (neg, digits[..n].to_vec(), decpt)
    }

    #[test]
    fn zmij_digits_match_rusts_shortest_formatting() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let check = |f: f64| {
            if !f.is_finite() {
                return;
            }
            // The reference after the tie-break to even that Ruby's dtoa makes.
            let (rneg, rdigits, rdecpt) = reference_digits(f);
            let even = match tie_to_even(f, &rdigits) {
                Some(v) => format!("{v:0width$}", width = rdigits.len()).into_bytes(),
                None => rdigits,
            };
            let ours = shortest(f);
            assert_eq!(
                (ours.negative, ours.digits(), ours.decpt),
                (rneg, &even[..], rdecpt),
                "{f:e}"
            );
        };
        for _ in 0..200_000 {
            check(f64::from_bits(next(&mut seed)));
        }
        for _ in 0..100_000 {
            // Short decimals, like most documents' numbers.
            let v =
                (next(&mut seed) % 10_000_000) as f64 / 10f64.powi((next(&mut seed) % 12) as i32);
            check(v);
            check(-v * 1e3);
        }
        for f in [
            0.0,
            -0.0,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            1e15,
            1e16,
            1e-5,
            1e-4,
            0.1,
        ] {
            check(f);
        }
    }

    /// Doubles that are exact ties between two shortest candidates, where Rust's own
    /// formatting keeps the other one: Żmij must give dtoa's even digits unaided, for
    /// neither the JSON generator nor Marshal checks ties.
    #[test]
    fn zmij_breaks_ties_to_even_like_dtoa() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut ties = 0;
        for i in 0..400_000u64 {
            let r = next(&mut seed);
            // A short binary fraction: between 1 and 27 binary places after the point.
            let f = (r >> 12) as f64 / 2f64.powi(1 + (i % 27) as i32);
            let (_, rdigits, _) = reference_digits(f);
            let Some(even) = tie_to_even(f, &rdigits) else {
                continue;
            };
            ties += 1;
            let mut buffer = zmij::Buffer::new();
            let text = buffer.format_finite(f).as_bytes().to_vec();
            let mut digits = [0u8; 24];
            let (_, len, _) = digits_of_text(&text, &mut digits);
            let want = format!("{even:0width$}", width = rdigits.len());
            assert_eq!(&digits[..len], want.as_bytes(), "{f:e}");
        }
        assert!(ties > 1000, "{ties}");
    }
}
