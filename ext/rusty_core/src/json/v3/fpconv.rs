//! Floats as json 3 writes them: the Grisu2 digits of fpconv (Florian Loitsch's algorithm,
//! as night-shift/fpconv implements it and json vendors it), not the shortest digits
//! `Float#to_s` gives. Grisu2 is not always shortest (a few doubles in a thousand get an
//! extra digit), so the algorithm itself is what must match, step for step: the same cached
//! powers (tools/grisu_powers.py, checked against fpconv's table), the same rounded
//! products, the same digit loop and rounding. Then json's layout: plain decimals with
//! `.0` up to 15 integer digits, `0.000001`-style fractions down to 1e-6 (or while the
//! exponent is below 10), scientific notation (`1e+20`, `1.5e-300`) beyond.

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
fn cached_power(exp: i32) -> (Fp, i32) {
    const ONE_LOG_TEN: f64 = 0.301_029_995_663_981_14;
    let approx = (-((exp + POWERS.len() as i32) as f64) * ONE_LOG_TEN) as i32;
    let mut idx = (approx - FIRST_POWER) / STEP_POWERS;
    loop {
        let (frac, power_exp) = POWERS[idx as usize];
        let current = exp + power_exp + 64;
        if current < EXP_MIN {
            idx += 1;
            continue;
        }
        if current > EXP_MAX {
            idx -= 1;
            continue;
        }
        return (
            Fp {
                frac,
                exp: power_exp,
            },
            FIRST_POWER + idx * STEP_POWERS,
        );
    }
}

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

/// The digits of `w` (between `lower` and `upper`), and `k` adjusted by where they end.
fn generate_digits(w: Fp, upper: Fp, lower: Fp, digits: &mut [u8; 18], k: &mut i32) -> usize {
    let wfrac = upper.frac.wrapping_sub(w.frac);
    let delta = upper.frac.wrapping_sub(lower.frac);
    let shift = (-upper.exp) as u32;
    let one = 1u64 << shift;
    // `shift` is 32 to 60 (EXP_MIN, EXP_MAX) and `upper` normalized, so the integral
    // part has 1 to 10 digits.
    let part1 = (upper.frac >> shift) as u32;
    let part2 = upper.frac & (one - 1);
    let mut n = 0;
    // fpconv divides by 10^9 down to 10^0, counting `kappa` down from 10, and stops at
    // the first digit whose remainder is within `delta`. Its leading zeros cannot stop it
    // (the remainder is then all of `upper`, above `delta`), so this starts at the first
    // digit, and finds the digits by constant divisions.
    let len = decimal_len(part1);
    let mut kappa = len as i32;
    let mut integral = [0u8; 10];
    let mut rest = part1;
    for digit in integral[..len].iter_mut().rev() {
        *digit = (rest % 10) as u8;
        rest /= 10;
    }
    if delta < one {
        // The common case (a double needing more digits than the integral part has):
        // the test below, `(rest << shift) + part2 <= delta`, can only hold where the
        // rest is 0, i.e. after the last non-zero digit, and then only if part2 <= delta.
        // So the digits are found without testing each one.
        for (slot, &digit) in digits.iter_mut().zip(&integral[..len]) {
            *slot = digit + b'0';
        }
        if part2 > delta {
            return fraction_digits(part2, delta, shift, wfrac, digits, len, k);
        }
        let n = len
            - integral[..len]
                .iter()
                .rev()
                .take_while(|&&d| d == 0)
                .count();
        *k += (len - n) as i32;
        round_digit(
            digits,
            n,
            delta,
            part2,
            TENS[19 - (len - n)] << shift,
            wfrac,
        );
        return n;
    }
    let mut rest = part1 as u64;
    for (i, &digit) in integral[..len].iter().enumerate() {
        let div = TENS[20 - len + i];
        digits[n] = digit + b'0';
        n += 1;
        rest -= digit as u64 * div;
        kappa -= 1;
        let tmp = (rest << shift).wrapping_add(part2);
        if tmp <= delta {
            *k += kappa;
            round_digit(digits, n, delta, tmp, div << shift, wfrac);
            return n;
        }
    }
    fraction_digits(part2, delta, shift, wfrac, digits, n, k)
}

/// `generate_digits` past the integral part's `n` digits: the digits of `part2`, the
/// fraction (below `1 << shift`), until the remainder is within `delta`.
fn fraction_digits(
    mut part2: u64,
    mut delta: u64,
    shift: u32,
    wfrac: u64,
    digits: &mut [u8; 18],
    mut n: usize,
    k: &mut i32,
) -> usize {
    let one = 1u64 << shift;
    let mut kappa = 0;
    let mut unit = 18; // TENS[18] == 10
    loop {
        part2 = part2.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;
        let digit = part2 >> shift;
        // fpconv skips leading zeros here; there are none: the integral part (at least
        // 1, `upper` being normalized) gave the first digit.
        debug_assert!(n != 0);
        digits[n] = digit as u8 + b'0';
        n += 1;
        part2 &= one - 1;
        if part2 < delta {
            *k += kappa;
            round_digit(digits, n, delta, part2, one, wfrac.wrapping_mul(TENS[unit]));
            return n;
        }
        unit -= 1;
    }
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
fn grisu2(d: f64, digits: &mut [u8; 18]) -> (usize, i32) {
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

/// json's layout of `digits * 10^k` (fpconv's `emit_digits` as json modified it).
fn emit_digits(digits: &[u8], k: i32, negative: bool, out: &mut Vec<u8>) {
    let n = digits.len() as i32;
    let exp = (k + n - 1).abs();
    if k >= 0 && exp < 15 {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', k as usize));
        out.extend_from_slice(b".0");
        return;
    }
    if k < 0 && (k > -7 || exp < 10) {
        let offset = n - k.abs();
        if offset <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-offset) as usize));
            out.extend_from_slice(digits);
        } else {
            out.extend_from_slice(&digits[..offset as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[offset as usize..]);
        }
        return;
    }
    let n = n.min(18 - negative as i32) as usize;
    out.push(digits[0]);
    if n > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..n]);
    }
    out.push(b'e');
    out.push(if k + n as i32 - 1 < 0 { b'-' } else { b'+' });
    let mut exp = exp;
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        out.push(cent as u8 + b'0');
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        out.push(dec as u8 + b'0');
        exp -= dec * 10;
    } else if cent != 0 {
        out.push(b'0');
    }
    out.push((exp % 10) as u8 + b'0');
}

/// Appends finite `d` as json 3's generator writes it (`fpconv_dtoa`).
pub fn write_f64(d: f64, out: &mut Vec<u8>) {
    let negative = d.to_bits() & SIGN_MASK != 0;
    if negative {
        out.push(b'-');
    }
    if d == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    let mut digits = [0u8; 18];
    let (n, k) = grisu2(d.abs(), &mut digits);
    emit_digits(&digits[..n], k, negative, out);
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

    /// fpconv's `generate_digits` as written in C (a division by each power of ten from
    /// 10^9 down) up to the fraction: ours must find the same digits and exponent.
    fn reference_digits(w: Fp, upper: Fp, lower: Fp, digits: &mut [u8; 18], k: &mut i32) -> usize {
        let wfrac = upper.frac.wrapping_sub(w.frac);
        let delta = upper.frac.wrapping_sub(lower.frac);
        let shift = (-upper.exp) as u32;
        let one = 1u64 << shift;
        let mut part1 = upper.frac >> shift;
        let part2 = upper.frac & (one - 1);
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
        fraction_digits(part2, delta, shift, wfrac, digits, n, k)
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

    fn both_digits(d: f64) -> ((Vec<u8>, i32), (Vec<u8>, i32)) {
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
        let (mut ours, mut theirs) = ([0u8; 18], [0u8; 18]);
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
        // And decimal-looking ones, like a document's: a random integer over a power of ten.
        let decimal: Vec<f64> = (0..300_000)
            .map(|_| (next() % 100_000_000_000) as f64 / 10f64.powi((next() % 12) as i32))
            .collect();
        for d in specials
            .into_iter()
            .chain(random)
            .chain(decimal)
            .filter(|d| *d != 0.0)
        {
            let (ours, theirs) = both_digits(d);
            assert_eq!(ours, theirs, "{d:e}");
        }
    }
}
