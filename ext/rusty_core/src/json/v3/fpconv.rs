//! Floats as json 3 writes them: the Grisu2 digits of fpconv (Florian Loitsch's algorithm,
//! as night-shift/fpconv implements it and json vendors it), not the shortest digits
//! `Float#to_s` gives. Grisu2 is not always shortest (a few doubles in a thousand get an
//! extra digit), so the algorithm itself is what must match, step for step: the same cached
//! powers (tools/grisu_powers.py, checked against fpconv's table), the same rounded
//! products, the same digit loop and rounding. Then json's layout: plain decimals with
//! `.0` up to 15 integer digits, `0.000001`-style fractions down to 1e-6 (or while the
//! exponent is below 10), scientific notation (`1e+20`, `1.5e-300`) beyond.

use crate::json::generate::write_pair;
use crate::json::Output;

/// Cached powers of ten, (significand, binary exponent), from 10^-348 to 10^340 in
/// steps of 8 (tools/grisu_powers.py).
const POWERS: [(u64, i32); 87] = [
    (18054884314459144840, -1220),
    (13451937075301367670, -1193),
    (10022474136428063862, -1166),
    (14934650266808366570, -1140),
    (11127181549972568877, -1113),
    (16580792590934885855, -1087),
    (12353653155963782858, -1060),
    (18408377700990114895, -1034),
    (13715310171984221708, -1007),
    (10218702384817765436, -980),
    (15227053142812498563, -954),
    (11345038669416679861, -927),
    (16905424996341287883, -901),
    (12595523146049147757, -874),
    (9384396036005875287, -847),
    (13983839803942852151, -821),
    (10418772551374772303, -794),
    (15525180923007089351, -768),
    (11567161174868858868, -741),
    (17236413322193710309, -715),
    (12842128665889583758, -688),
    (9568131466127621947, -661),
    (14257626930069360058, -635),
    (10622759856335341974, -608),
    (15829145694278690180, -582),
    (11793632577567316726, -555),
    (17573882009934360870, -529),
    (13093562431584567480, -502),
    (9755464219737475723, -475),
    (14536774485912137811, -449),
    (10830740992659433045, -422),
    (16139061738043178685, -396),
    (12024538023802026127, -369),
    (17917957937422433684, -343),
    (13349918974505688015, -316),
    (9946464728195732843, -289),
    (14821387422376473014, -263),
    (11042794154864902060, -236),
    (16455045573212060422, -210),
    (12259964326927110867, -183),
    (18268770466636286478, -157),
    (13611294676837538539, -130),
    (10141204801825835212, -103),
    (15111572745182864684, -77),
    (11258999068426240000, -50),
    (16777216000000000000, -24),
    (12500000000000000000, 3),
    (9313225746154785156, 30),
    (13877787807814456755, 56),
    (10339757656912845936, 83),
    (15407439555097886824, 109),
    (11479437019748901445, 136),
    (17105694144590052135, 162),
    (12744735289059618216, 189),
    (9495567745759798747, 216),
    (14149498560666738074, 242),
    (10542197943230523224, 269),
    (15709099088952724970, 295),
    (11704190886730495818, 322),
    (17440603504673385349, 348),
    (12994262207056124023, 375),
    (9681479787123295682, 402),
    (14426529090290212157, 428),
    (10748601772107342003, 455),
    (16016664761464807395, 481),
    (11933345169920330789, 508),
    (17782069995880619868, 534),
    (13248674568444952270, 561),
    (9871031767461413346, 588),
    (14708983551653345445, 614),
    (10959046745042015199, 641),
    (16330252207878254650, 667),
    (12166986024289022870, 694),
    (18130221999122236476, 720),
    (13508068024458167312, 747),
    (10064294952495520794, 774),
    (14996968138956309548, 800),
    (11173611982879273257, 827),
    (16649979327439178909, 853),
    (12405201291620119593, 880),
    (9242595204427927429, 907),
    (13772540099066387757, 933),
    (10261342003245940623, 960),
    (15290591125556738113, 986),
    (11392378155556871081, 1013),
    (16975966327722178521, 1039),
    (12648080533535911531, 1066),
];

const FRAC_MASK: u64 = 0x000F_FFFF_FFFF_FFFF;
const EXP_MASK: u64 = 0x7FF0_0000_0000_0000;
const HIDDEN_BIT: u64 = 0x0010_0000_0000_0000;
const SIGN_MASK: u64 = 0x8000_0000_0000_0000;
const EXP_BIAS: i32 = 1023 + 52;
const FIRST_POWER: i32 = -348;
const STEP_POWERS: i32 = 8;
const EXP_MIN: i32 = -60;
const EXP_MAX: i32 = -32;

/// 10^19 down to 10^0.
const TENS: [u64; 20] = [
    10_000_000_000_000_000_000,
    1_000_000_000_000_000_000,
    100_000_000_000_000_000,
    10_000_000_000_000_000,
    1_000_000_000_000_000,
    100_000_000_000_000,
    10_000_000_000_000,
    1_000_000_000_000,
    100_000_000_000,
    10_000_000_000,
    1_000_000_000,
    100_000_000,
    10_000_000,
    1_000_000,
    100_000,
    10_000,
    1_000,
    100,
    10,
    1,
];

/// A value `frac * 2^exp`.
#[derive(Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

fn build_fp(d: f64) -> Fp {
    let bits = d.to_bits();
    let frac = bits & FRAC_MASK;
    let exp = ((bits & EXP_MASK) >> 52) as i32;
    if exp != 0 {
        Fp {
            frac: frac + HIDDEN_BIT,
            exp: exp - EXP_BIAS,
        }
    } else {
        Fp {
            frac,
            exp: -EXP_BIAS + 1,
        }
    }
}

fn normalize(fp: &mut Fp) {
    while fp.frac & HIDDEN_BIT == 0 {
        fp.frac <<= 1;
        fp.exp -= 1;
    }
    let shift = 64 - 52 - 1;
    fp.frac <<= shift;
    fp.exp -= shift;
}

/// The boundaries halfway to the neighbouring doubles, `lower` on `upper`'s exponent.
fn normalized_boundaries(fp: Fp) -> (Fp, Fp) {
    let mut upper = Fp {
        frac: (fp.frac << 1) + 1,
        exp: fp.exp - 1,
    };
    while upper.frac & (HIDDEN_BIT << 1) == 0 {
        upper.frac <<= 1;
        upper.exp -= 1;
    }
    let u_shift = 64 - 52 - 2;
    upper.frac <<= u_shift;
    upper.exp -= u_shift;
    let l_shift = if fp.frac == HIDDEN_BIT { 2 } else { 1 };
    let mut lower = Fp {
        frac: (fp.frac << l_shift) - 1,
        exp: fp.exp - l_shift,
    };
    lower.frac <<= lower.exp - upper.exp;
    lower.exp = upper.exp;
    (lower, upper)
}

/// The product's high 64 bits, rounded (fpconv's `multiply`).
fn multiply(a: Fp, b: Fp) -> Fp {
    // fpconv multiplies 32-bit halves and rounds at bit 63 of the 128-bit product; the
    // bits it drops (the low half of the lowest partial product) cannot carry into the
    // upper 64, so this is the same number.
    let product = a.frac as u128 * b.frac as u128 + (1u128 << 63);
    Fp {
        frac: (product >> 64) as u64,
        exp: a.exp + b.exp + 64,
    }
}

/// The cached power that brings `exp` into [EXP_MIN, EXP_MAX], and its decimal exponent.
#[inline(always)]
fn cached_power(exp: i32) -> (Fp, i32) {
    let idx = match POWER_INDEX.get(exp.wrapping_sub(INDEXED_EXP_MIN) as usize) {
        Some(&idx) => idx as usize,
        None => search_power(exp),
    };
    let (frac, power_exp) = POWERS[idx];
    (
        Fp {
            frac,
            exp: power_exp,
        },
        FIRST_POWER + idx as i32 * STEP_POWERS,
    )
}

/// fpconv's search for the cached power of `exp`: from an estimate by log10(2), up or
/// down to the first power that brings `exp` into range. (Where two powers would, the
/// estimate decides which, so this is the search itself, not any power in range.)
const fn search_power(exp: i32) -> usize {
    search_power_by(exp, ONE_LOG_TEN)
}

/// fpconv's log10(2).
const ONE_LOG_TEN: f64 = 0.301_029_995_663_981_14;

/// [`search_power`] with log10(2) given (a test passes it as a value only known at run
/// time, so that the search's float arithmetic runs there too).
const fn search_power_by(exp: i32, one_log_ten: f64) -> usize {
    let approx = (-((exp + POWERS.len() as i32) as f64) * one_log_ten) as i32;
    let mut idx = (approx - FIRST_POWER) / STEP_POWERS;
    loop {
        let current = exp + POWERS[idx as usize].1 + 64;
        if current < EXP_MIN {
            idx += 1;
        } else if current > EXP_MAX {
            idx -= 1;
        } else {
            return idx as usize;
        }
    }
}

/// The binary exponents of the upper boundaries Grisu2 scales: of the smallest
/// subnormal double's (normalized) to the largest double's.
const INDEXED_EXP_MIN: i32 = -1137;
const INDEXED_EXP_MAX: i32 = 960;

/// [`search_power`]'s answer for each exponent from INDEXED_EXP_MIN to INDEXED_EXP_MAX,
/// found when compiling: the search's float estimate and steps sat on every float's
/// critical path.
static POWER_INDEX: [u8; (INDEXED_EXP_MAX - INDEXED_EXP_MIN + 1) as usize] = {
    let mut table = [0u8; (INDEXED_EXP_MAX - INDEXED_EXP_MIN + 1) as usize];
    let mut i = 0;
    while i < table.len() {
        table[i] = search_power(INDEXED_EXP_MIN + i as i32) as u8;
        i += 1;
    }
    table
};

fn round_digit(digits: &mut [u8], n: usize, delta: u64, mut rem: u64, kappa: u64, frac: u64) {
    while rem < frac
        && delta.wrapping_sub(rem) >= kappa
        && (rem.wrapping_add(kappa) < frac
            || frac.wrapping_sub(rem) > rem.wrapping_add(kappa).wrapping_sub(frac))
    {
        digits[n - 1] -= 1;
        rem = rem.wrapping_add(kappa);
    }
}

/// Room for the digits (Grisu2 finds at most 17 or 18) and the padding that lets
/// [`write_f64`] copy them in fixed-size pieces.
const DIGITS: usize = 40;

/// The digits of `w` (between `lower` and `upper`), and `k` adjusted by where they end.
fn generate_digits(w: Fp, upper: Fp, lower: Fp, digits: &mut [u8; DIGITS], k: &mut i32) -> usize {
    let wfrac = upper.frac.wrapping_sub(w.frac);
    let delta = upper.frac.wrapping_sub(lower.frac);
    let shift = (-upper.exp) as u32;
    let one = 1u64 << shift;
    // `shift` is 32 to 60 (EXP_MIN, EXP_MAX) and `upper` normalized, so the integral
    // part has 1 to 10 digits.
    let part1 = (upper.frac >> shift) as u32;
    let part2 = upper.frac & (one - 1);
    // fpconv divides by 10^9 down to 10^0, counting `kappa` down from 10, and stops at
    // the first digit whose remainder is within `delta`. Its leading zeros cannot stop it
    // (the remainder is then all of `upper`, above `delta`), so this starts at the first
    // digit.
    let len = decimal_len(part1);
    if delta < one {
        // The common case (a double needing more digits than the integral part has):
        // the test below, `(rest << shift) + part2 <= delta`, can only hold where the
        // rest is 0, i.e. after the last non-zero digit, and then only if part2 <= delta.
        // So the digits are found without testing each one.
        if part2 > delta {
            return fraction_digits(part1, len, part2, delta, shift, wfrac, digits, k);
        }
        write_padded(part1 as u64, &mut digits[..len]);
        let zeros = digits[..len]
            .iter()
            .rev()
            .take_while(|&&d| d == b'0')
            .count();
        let n = len - zeros;
        *k += zeros as i32;
        round_digit(digits, n, delta, part2, TENS[19 - zeros] << shift, wfrac);
        return n;
    }
    let mut integral = [0u8; 10];
    write_padded(part1 as u64, &mut integral[..len]);
    let mut kappa = len as i32;
    let mut rest = part1 as u64;
    for (i, &digit) in integral[..len].iter().enumerate() {
        let div = TENS[20 - len + i];
        digits[i] = digit;
        rest -= (digit - b'0') as u64 * div;
        kappa -= 1;
        let tmp = (rest << shift).wrapping_add(part2);
        if tmp <= delta {
            *k += kappa;
            round_digit(digits, i + 1, delta, tmp, div << shift, wfrac);
            return i + 1;
        }
    }
    // Not reached: with `delta` at least `one`, the last integral digit's remainder,
    // `part2`, is within it.
    unreachable!("fpconv: the integral digits of a double did not end")
}

/// `generate_digits` when the digits go past the integral part (`part1`, of `len`
/// digits) into the fraction, `part2` (below `1 << shift`, and above `delta`).
///
/// fpconv finds the fraction's digits one by one, multiplying `part2` and `delta` by ten
/// and stopping at the first digit `j` where `(part2 * 10^j) mod 2^shift < delta * 10^j`.
/// That remainder over 10^j is how far `part2` is from its first `j` digits, which only
/// shrinks as `j` grows: once the test holds it holds for every later `j`. So the `j` is
/// found here directly, down from the last one it can be ([`last_stop`]), and the `j`
/// digits come from one product. (Every product here fits: `part2` and `delta` are below
/// 2^60, and `delta * 10^j` below 10 * 2^shift up to the last stop.)
#[allow(clippy::too_many_arguments)]
fn fraction_digits(
    part1: u32,
    len: usize,
    part2: u64,
    delta: u64,
    shift: u32,
    wfrac: u64,
    digits: &mut [u8; DIGITS],
    k: &mut i32,
) -> usize {
    let mask = (1u64 << shift) - 1;
    let ten_to = |j: usize| TENS[19 - j];
    // The remainder mod 2^shift of a product is that of the product mod 2^64.
    let stops = |j: usize| part2.wrapping_mul(ten_to(j)) & mask < delta * ten_to(j);
    let mut j = last_stop(delta, shift);
    while j > 1 && stops(j - 1) {
        j -= 1;
    }
    let scaled = part2 as u128 * ten_to(j) as u128;
    let fraction = (scaled >> shift) as u64;
    let n = len + j;
    if n <= 19 {
        // All the digits as one number (below 10^19), written at once.
        write_padded(part1 as u64 * ten_to(j) + fraction, &mut digits[..n]);
    } else {
        write_padded(part1 as u64, &mut digits[..len]);
        write_padded(fraction, &mut digits[len..n]);
    }
    *k -= j as i32;
    round_digit(
        digits,
        n,
        delta * ten_to(j),
        scaled as u64 & mask,
        1u64 << shift,
        wfrac.wrapping_mul(ten_to(j)),
    );
    n
}

/// The first `j` (at least 1) with `delta * 10^j >= 2^shift` (`delta` at least 1 and
/// below 2^shift): from there on every fraction digit stops fpconv's loop.
#[inline(always)]
fn last_stop(delta: u64, shift: u32) -> usize {
    // 2^shift / delta is above 2^(bits - 1) and at most 2^bits, so `j` is one of the two
    // after floor((bits - 1) * log10(2)) (78913 / 2^18 gives that floor for every
    // `bits` to 64).
    let bits = shift - (63 - delta.leading_zeros());
    let j = (((bits as usize - 1) * 78913) >> 18) + 1;
    if delta * TENS[19 - j] >= 1u64 << shift {
        j
    } else {
        j + 1
    }
}

/// `v` (below 10^out.len()) as exactly `out.len()` digits, leading zeros and all: eight
/// at a time in 32-bit arithmetic, then by pairs.
#[inline(always)]
fn write_padded(mut v: u64, out: &mut [u8]) {
    let mut end = out.len();
    while end >= 8 {
        let eight = (v % 100_000_000) as u32;
        v /= 100_000_000;
        out[end - 8..end].copy_from_slice(&eight_digits(eight).to_le_bytes());
        end -= 8;
    }
    let mut v = v as u32;
    while end >= 2 {
        // SAFETY: the slice has the pair's two bytes.
        unsafe { write_pair(out[end - 2..end].as_mut_ptr(), v % 100) };
        v /= 100;
        end -= 2;
    }
    if end == 1 {
        out[0] = v as u8 + b'0';
    }
}

/// The eight digits of `x` (below 10^8) as the bytes of a little-endian word, found in
/// parallel: the two halves of four digits, then the pairs of each, then the digits of
/// each pair, each step dividing all lanes at once by a multiply and shift that is exact
/// in its range.
#[inline(always)]
fn eight_digits(x: u32) -> u64 {
    let x = x as u64;
    let halves = (x / 10_000) | ((x % 10_000) << 32);
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = ((halves - 100 * hundreds) << 16) | hundreds;
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = ((pairs - 10 * tens) << 8) | tens;
    digits | 0x3030_3030_3030_3030
}

/// How many decimal digits `x` (not 0) has.
#[inline(always)]
fn decimal_len(x: u32) -> usize {
    TENS[10..]
        .iter()
        .position(|&t| x as u64 >= t)
        .map_or(1, |i| 10 - i)
}

/// Grisu2: the digits of positive, finite, non-zero `d` and the power of ten `K` of the
/// last one (`d ~= digits * 10^K`).
fn grisu2(d: f64, digits: &mut [u8; DIGITS]) -> (usize, i32) {
    let mut w = build_fp(d);
    let (lower, upper) = normalized_boundaries(w);
    normalize(&mut w);
    let (cached, k) = cached_power(upper.exp);
    let w = multiply(w, cached);
    let mut upper = multiply(upper, cached);
    let mut lower = multiply(lower, cached);
    lower.frac += 1;
    upper.frac -= 1;
    let mut big_k = -k;
    let n = generate_digits(w, upper, lower, digits, &mut big_k);
    (n, big_k)
}

/// The longest text [`write_f64`] writes, and the most it writes past that in
/// fixed-size pieces: room it reserves in `out` first.
const TEXT_ROOM: usize = 64;

/// json's layout of `digits[..n] * 10^k` (fpconv's `emit_digits` as json modified it),
/// written at `dst`, which has [`TEXT_ROOM`] bytes of room; returns how many it wrote.
/// The digits are copied 20 bytes at a time (at most 18 are digits, `digits` is padded
/// to allow it), and runs of zeros 16 at a time.
///
/// # Safety
/// `dst` must be valid for writing [`TEXT_ROOM`] bytes.
unsafe fn emit_digits(
    digits: &[u8; DIGITS],
    n: usize,
    k: i32,
    negative: bool,
    dst: *mut u8,
) -> usize {
    use std::ptr::{copy_nonoverlapping as copy, write_bytes};
    let exp = (k + n as i32 - 1).abs();
    let src = digits.as_ptr();
    if k >= 0 && exp < 15 {
        // `n + k` is at most 15.
        let k = k as usize;
        copy(src, dst, 20);
        write_bytes(dst.add(n), b'0', 16);
        copy(b".0".as_ptr(), dst.add(n + k), 2);
        return n + k + 2;
    }
    if k < 0 && (k > -7 || exp < 10) {
        let offset = n as i32 + k;
        if offset <= 0 {
            // Fewer than 9 zeros after the point (k > -7, or k + n - 1 > -10).
            let zeros = (-offset) as usize;
            copy(b"0.".as_ptr(), dst, 2);
            write_bytes(dst.add(2), b'0', 16);
            copy(src, dst.add(2 + zeros), 20);
            return 2 + zeros + n;
        }
        let offset = offset as usize;
        copy(src, dst, 20);
        *dst.add(offset) = b'.';
        copy(src.add(offset), dst.add(offset + 1), 20);
        return n + 1;
    }
    // At most 24 bytes, laid out on the stack (no allocation) and copied.
    let mut text = [0u8; 32];
    let len = scientific(&digits[..n], k, exp, negative, &mut text);
    copy(text.as_ptr(), dst, len);
    len
}

/// [`emit_digits`]' `1.5e+300` layout (json limits the digits after the first), in
/// `text`; returns its length.
fn scientific(digits: &[u8], k: i32, mut exp: i32, negative: bool, text: &mut [u8; 32]) -> usize {
    let mut len = 0;
    let mut push = |byte: u8| {
        text[len] = byte;
        len += 1;
    };
    let n = digits.len().min(18 - negative as usize);
    push(digits[0]);
    if n > 1 {
        push(b'.');
        digits[1..n].iter().for_each(|&d| push(d));
    }
    push(b'e');
    push(if k + n as i32 - 1 < 0 { b'-' } else { b'+' });
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        push(cent as u8 + b'0');
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        push(dec as u8 + b'0');
        exp -= dec * 10;
    } else if cent != 0 {
        push(b'0');
    }
    push((exp % 10) as u8 + b'0');
    len
}

/// Appends finite `d` as json 3's generator writes it (`fpconv_dtoa`).
#[inline(always)]
pub fn write_f64(d: f64, out: &mut impl Output) {
    out.reserve(TEXT_ROOM);
    let start = out.len();
    // SAFETY: `reserve` made TEXT_ROOM bytes of room after `start`, and `write_text`
    // initializes the bytes it counts.
    unsafe {
        let written = write_text(d, out.as_mut_ptr().add(start));
        out.set_len(start + written);
    }
}

/// [`write_f64`]'s text written at `dst`; returns its length. One function whatever the
/// output type, so that the digit generation is inlined into it (and not into each
/// caller, which took more time than the call).
///
/// # Safety
/// `dst` is valid for TEXT_ROOM bytes of writes: the sign takes one, and emit_digits
/// writes at most TEXT_ROOM - 1 (its longest text is 28 bytes, its fixed-size pieces
/// reach 39).
#[inline(never)]
pub unsafe fn write_text(d: f64, mut dst: *mut u8) -> usize {
    let negative = d.to_bits() & SIGN_MASK != 0;
    if negative {
        *dst = b'-';
        dst = dst.add(1);
    }
    let written = if d == 0.0 {
        std::ptr::copy_nonoverlapping(b"0.0".as_ptr(), dst, 3);
        3
    } else {
        let mut digits = [0u8; DIGITS];
        let (n, k) = grisu2(d.abs(), &mut digits);
        emit_digits(&digits, n, k, negative, dst)
    };
    negative as usize + written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(d: f64) -> String {
        let mut out = Vec::new();
        write_f64(d, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// json 3.1.0's own output for these (Debian sid, Ruby 3.3.8).
    #[test]
    fn writes_what_json_3_writes() {
        let cases = [
            (1e20, "1e+20"),
            (1e-5, "0.00001"),
            (2.5e-7, "0.00000025"),
            (1e16, "1e+16"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (123456789.123, "123456789.123"),
            (1e15, "1e+15"),
            (1e14, "100000000000000.0"),
            (1e-7, "0.0000001"),
            (1e-10, "1e-10"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100.0, "100.0"),
            (1.5e300, "1.5e+300"),
            (-1.5e-300, "-1.5e-300"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (0.30000000000000004, "0.30000000000000004"),
        ];
        for (d, expected) in cases {
            assert_eq!(text(d), expected, "{d:e}");
        }
    }

    /// fpconv's `generate_digits` as written in C: a division by each power of ten from
    /// 10^9 down, then one fraction digit at a time. Ours must find the same digits and
    /// exponent.
    fn reference_digits(
        w: Fp,
        upper: Fp,
        lower: Fp,
        digits: &mut [u8; DIGITS],
        k: &mut i32,
    ) -> usize {
        let wfrac = upper.frac.wrapping_sub(w.frac);
        let mut delta = upper.frac.wrapping_sub(lower.frac);
        let shift = (-upper.exp) as u32;
        let one = 1u64 << shift;
        let mut part1 = upper.frac >> shift;
        let mut part2 = upper.frac & (one - 1);
        let (mut n, mut kappa) = (0, 10);
        for &div in &TENS[10..] {
            let digit = part1 / div;
            if digit != 0 || n != 0 {
                digits[n] = digit as u8 + b'0';
                n += 1;
            }
            part1 -= digit * div;
            kappa -= 1;
            let tmp = (part1 << shift).wrapping_add(part2);
            if tmp <= delta {
                *k += kappa;
                round_digit(digits, n, delta, tmp, div << shift, wfrac);
                return n;
            }
        }
        let mut unit = 18; // TENS[18] == 10
        loop {
            part2 = part2.wrapping_mul(10);
            delta = delta.wrapping_mul(10);
            kappa -= 1;
            let digit = part2 >> shift;
            if digit != 0 || n != 0 {
                digits[n] = digit as u8 + b'0';
                n += 1;
            }
            part2 &= one - 1;
            if part2 < delta {
                *k += kappa;
                round_digit(digits, n, delta, part2, one, wfrac.wrapping_mul(TENS[unit]));
                return n;
            }
            unit -= 1;
        }
    }

    /// fpconv's `emit_digits` as json modified it, one byte at a time.
    fn reference_emit(digits: &[u8], k: i32, negative: bool, out: &mut impl Output) {
        let n = digits.len() as i32;
        let exp = (k + n - 1).abs();
        if k >= 0 && exp < 15 {
            out.extend_from_slice(digits);
            out.push_repeated(b'0', k as usize);
            out.extend_from_slice(b".0");
        } else if k < 0 && (k > -7 || exp < 10) {
            let offset = n - k.abs();
            if offset <= 0 {
                out.extend_from_slice(b"0.");
                out.push_repeated(b'0', (-offset) as usize);
                out.extend_from_slice(digits);
            } else {
                out.extend_from_slice(&digits[..offset as usize]);
                out.push(b'.');
                out.extend_from_slice(&digits[offset as usize..]);
            }
        } else {
            let mut text = [0u8; 32];
            let len = scientific(digits, k, exp, negative, &mut text);
            out.extend_from_slice(&text[..len]);
        }
    }

    /// `d`'s text by the reference digits and layout.
    fn reference_text(d: f64) -> String {
        let negative = d.is_sign_negative();
        let mut out = if negative { b"-".to_vec() } else { Vec::new() };
        if d == 0.0 {
            out.extend_from_slice(b"0.0");
        } else {
            let (w, upper, lower, k) = scaled(d.abs());
            let mut digits = [0u8; DIGITS];
            let mut big_k = -k;
            let n = reference_digits(w, upper, lower, &mut digits, &mut big_k);
            reference_emit(&digits[..n], big_k, negative, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn indexes_the_powers_the_search_finds() {
        // The search at run time (its float arithmetic there, as fpconv's), for every
        // exponent in the table.
        let one_log_ten = std::hint::black_box(ONE_LOG_TEN);
        for exp in INDEXED_EXP_MIN..=INDEXED_EXP_MAX {
            let idx = POWER_INDEX[(exp - INDEXED_EXP_MIN) as usize] as usize;
            assert_eq!(idx, search_power_by(exp, one_log_ten), "{exp}");
        }
        // The table spans every double's upper boundary.
        for d in [5e-324, f64::MIN_POSITIVE, 1.0, f64::MAX] {
            let (_, upper) = normalized_boundaries(build_fp(d));
            assert!(
                (INDEXED_EXP_MIN..=INDEXED_EXP_MAX).contains(&upper.exp),
                "{d:e}"
            );
        }
        assert_eq!(
            normalized_boundaries(build_fp(5e-324)).1.exp,
            INDEXED_EXP_MIN
        );
        assert_eq!(
            normalized_boundaries(build_fp(f64::MAX)).1.exp,
            INDEXED_EXP_MAX
        );
    }

    #[test]
    fn writes_eight_digits_at_once() {
        for x in (0..100_000_000u32)
            .step_by(997)
            .chain([0, 1, 9, 10, 99_999_999, 10_000_000, 9_999])
        {
            assert_eq!(
                eight_digits(x).to_le_bytes(),
                *format!("{x:08}").as_bytes(),
                "{x}"
            );
        }
    }

    #[test]
    fn finds_the_last_stop() {
        for shift in 32..=60u32 {
            for bits in 0..shift {
                for delta in [1u64 << bits, (1u64 << bits) + 1, (2u64 << bits) - 1] {
                    let brute =
                        (1..20).find(|&j| delta as u128 * TENS[19 - j] as u128 >= 1u128 << shift);
                    assert_eq!(Some(last_stop(delta, shift)), brute, "{delta} {shift}");
                }
            }
        }
    }

    /// A seeded stream of pseudo-random numbers.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// fpconv's `multiply`, in 32-bit halves.
    fn reference_multiply(a: Fp, b: Fp) -> Fp {
        const LO: u64 = 0xFFFF_FFFF;
        let ah_bl = (a.frac >> 32) * (b.frac & LO);
        let al_bh = (a.frac & LO) * (b.frac >> 32);
        let al_bl = (a.frac & LO) * (b.frac & LO);
        let ah_bh = (a.frac >> 32) * (b.frac >> 32);
        let tmp = (ah_bl & LO) + (al_bh & LO) + (al_bl >> 32) + (1 << 31);
        Fp {
            frac: ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32),
            exp: a.exp + b.exp + 64,
        }
    }

    #[test]
    fn multiplies_as_fpconv_does() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
        let edges = [
            0,
            1,
            u32::MAX as u64,
            1 << 32,
            u64::MAX,
            u64::MAX - 1,
            1 << 63,
        ];
        let mut pairs: Vec<(u64, u64)> = edges
            .iter()
            .flat_map(|&a| edges.iter().map(move |&b| (a, b)))
            .collect();
        pairs.extend((0..1_000_000).map(|_| (next(), next())));
        for (a, b) in pairs {
            let (a, b) = (Fp { frac: a, exp: -3 }, Fp { frac: b, exp: 5 });
            assert_eq!(
                multiply(a, b).frac,
                reference_multiply(a, b).frac,
                "{:x} * {:x}",
                a.frac,
                b.frac
            );
        }
    }

    /// What [`grisu2`] hands `generate_digits` for positive `d`: `w` and its boundaries
    /// scaled by the cached power, and that power's decimal exponent.
    fn scaled(d: f64) -> (Fp, Fp, Fp, i32) {
        let mut w = build_fp(d);
        let (lower, upper) = normalized_boundaries(w);
        normalize(&mut w);
        let (cached, k) = cached_power(upper.exp);
        let (w, mut upper, mut lower) = (
            multiply(w, cached),
            multiply(upper, cached),
            multiply(lower, cached),
        );
        lower.frac += 1;
        upper.frac -= 1;
        (w, upper, lower, k)
    }

    fn both_digits(d: f64) -> ((Vec<u8>, i32), (Vec<u8>, i32)) {
        let (w, upper, lower, k) = scaled(d);
        let (mut ours, mut theirs) = ([0u8; DIGITS], [0u8; DIGITS]);
        let (mut ours_k, mut theirs_k) = (-k, -k);
        let n = generate_digits(w, upper, lower, &mut ours, &mut ours_k);
        let m = reference_digits(w, upper, lower, &mut theirs, &mut theirs_k);
        (
            (ours[..n].to_vec(), ours_k),
            (theirs[..m].to_vec(), theirs_k),
        )
    }

    #[test]
    fn finds_the_digits_fpconv_finds() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        let specials = [
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            1.0,
            0.1,
            1e15,
            1e16,
            1e21,
            4294967295.0,
            4294967296.0,
        ];
        let random: Vec<f64> = (0..300_000)
            .map(|_| f64::from_bits(next() & !SIGN_MASK))
            .filter(|d| d.is_finite())
            .collect();
        // Full-precision doubles of every size a document's numbers have, across the
        // sizes where json's layouts change (1e-7 to 1e16).
        let sized: Vec<f64> = (0..300_000)
            .map(|_| {
                let unit = f64::from_bits((next() >> 12) | 0x3FF0_0000_0000_0000) - 1.0;
                unit * 10f64.powi((next() % 30) as i32 - 10)
            })
            .collect();
        // And decimal-looking ones, like a document's: a random integer over a power of ten.
        let decimal: Vec<f64> = (0..300_000)
            .map(|_| (next() % 100_000_000_000) as f64 / 10f64.powi((next() % 12) as i32))
            .collect();
        for d in specials
            .into_iter()
            .chain(random)
            .chain(sized)
            .chain(decimal)
            .filter(|d| *d != 0.0)
        {
            let (ours, theirs) = both_digits(d);
            assert_eq!(ours, theirs, "{d:e}");
            for d in [d, -d] {
                // After other text, as a document writes it.
                let mut out = b"[1,".to_vec();
                write_f64(d, &mut out);
                assert_eq!(&out[3..], reference_text(d).as_bytes(), "{d:e}");
            }
        }
    }
}
