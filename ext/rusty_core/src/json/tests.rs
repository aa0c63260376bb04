//! Expected results below were taken from json 2.6.1 (Ruby 3.1) by hand; the RSpec suite
//! checks everything against the live gem.

use super::*;

/// Renders what the sink receives as a compact Ruby-ish inspect string.
#[derive(Default)]
struct Render {
    stack: Vec<String>,
}

impl Sink for Render {
    type Error = ();
    fn null(&mut self) -> Result<(), ()> {
        self.stack.push("nil".into());
        Ok(())
    }
    fn boolean(&mut self, value: bool) -> Result<(), ()> {
        self.stack.push(value.to_string());
        Ok(())
    }
    fn nan(&mut self) -> Result<(), ()> {
        self.stack.push("NaN".into());
        Ok(())
    }
    fn infinity(&mut self, negative: bool) -> Result<(), ()> {
        self.stack
            .push(if negative { "-Infinity" } else { "Infinity" }.into());
        Ok(())
    }
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), ()> {
        // The scan's value, where it gives one, is the literal's.
        assert!(value.is_none_or(|v| Some(v) == parse_int_fast(text)));
        self.stack
            .push(format!("i{}", String::from_utf8_lossy(text)));
        Ok(())
    }
    fn float(&mut self, text: &[u8], _decimal: &Decimal) -> Result<(), ()> {
        self.stack
            .push(format!("f{}", String::from_utf8_lossy(text)));
        Ok(())
    }
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), ()> {
        let prefix = if key { "k" } else { "s" };
        self.stack.push(format!("{prefix}{:?}", bytes));
        Ok(())
    }
    fn array(&mut self, len: usize) -> Result<(), ()> {
        let items = self.stack.split_off(self.stack.len() - len);
        self.stack.push(format!("[{}]", items.join(",")));
        Ok(())
    }
    fn object(&mut self, pairs: usize) -> Result<(), ()> {
        let items = self.stack.split_off(self.stack.len() - 2 * pairs);
        let pairs: Vec<String> = items.chunks(2).map(|kv| kv.join("=>")).collect();
        self.stack.push(format!("{{{}}}", pairs.join(",")));
        Ok(())
    }
}

fn run(src: &str, allow_nan: bool) -> Result<String, String> {
    run_with(src, allow_nan, false)
}

fn run_with(src: &str, allow_nan: bool, whole_number_fails: bool) -> Result<String, String> {
    let mut sink = Render::default();
    let options = Options {
        max_nesting: 100,
        allow_nan,
        stack_depth_limit: usize::MAX,
        whole_number_fails,
    };
    match parse(src.as_bytes(), &options, &mut sink, &mut Vec::new()) {
        Ok(()) => Ok(sink.stack.pop().unwrap()),
        Err(ParseError::Unexpected { line, at }) => Err(format!(
            "{line}: unexpected token at '{}'",
            String::from_utf8_lossy(excerpt(src.as_bytes(), at))
        )),
        Err(ParseError::Surrogate { at }) => Err(format!(
            "521: incomplete surrogate pair at '{}'",
            String::from_utf8_lossy(excerpt(src.as_bytes(), Some(at)))
        )),
        Err(ParseError::Nesting { depth }) => Err(format!("nesting of {depth} is too deep")),
        Err(ParseError::Sink(())) => Err("sink".into()),
        Err(ParseError::StackOverflow) => Err("stack level too deep".into()),
    }
}

fn err(src: &str) -> String {
    run(src, false).unwrap_err()
}

#[test]
fn accepts_values() {
    assert_eq!(
        run("[1, -2.5e3, true,false,null]", false).unwrap(),
        "[i1,f-2.5e3,true,false,nil]"
    );
    assert_eq!(
        run(" /**/ {\"a\" : [ ] } // c\n", false).unwrap(),
        "{k[97]=>[]}"
    );
    assert_eq!(
        run("[NaN,Infinity,-Infinity]", true).unwrap(),
        "[NaN,Infinity,-Infinity]"
    );
    assert_eq!(run("\"x\"", false).unwrap(), "s[120]");
}

#[test]
fn error_positions_match_json_2_6() {
    assert_eq!(err(""), "859: unexpected token at ''");
    assert_eq!(err("[1,]"), "451: unexpected token at ']'");
    assert_eq!(err("{\"a\":1,}"), "859: unexpected token at '{\"a\":1,}'");
    assert_eq!(
        err("[{\"a\":1,}]"),
        "451: unexpected token at '{\"a\":1,}]'"
    );
    assert_eq!(err("{\"a\":[1,]}"), "451: unexpected token at ']}'");
    assert_eq!(err("[1.5-2]"), "451: unexpected token at '.5-2]'");
    assert_eq!(err("1.5e"), "859: unexpected token at '.5e'");
    assert_eq!(err("[01]"), "451: unexpected token at '01]'");
    assert_eq!(err("[NaN]"), "225: unexpected token at 'NaN]'");
    assert_eq!(err("[1,Infinity]"), "232: unexpected token at ',Infinity]'");
    assert_eq!(err("Infinity"), "232: unexpected token at ''");
    assert_eq!(err("-Infinity"), "249: unexpected token at '-Infinity'");
    assert_eq!(err("[-Inf]"), "451: unexpected token at '-Inf]'");
    assert_eq!(err("[1] // c"), "859: unexpected token at ''");
    assert_eq!(err("[1/x]"), "451: unexpected token at 'x]'");
    assert_eq!(err("[\"a\u{0}b\"]"), "451: unexpected token at '\"a'");
    assert_eq!(
        err("[\"\\ud800x\"]"),
        "521: incomplete surrogate pair at '\\ud800x\"]'"
    );
    assert_eq!(
        run("[-Infinityx]", true).unwrap_err(),
        "451: unexpected token at 'x]'"
    );
}

#[test]
fn json_2_9_fails_broken_numbers_whole() {
    let err = |src: &str| run_with(src, false, true).unwrap_err();
    assert_eq!(err("[1.5-2]"), "451: unexpected token at '1.5-2]'");
    assert_eq!(err("1.5e"), "859: unexpected token at '1.5e'");
    assert_eq!(err("[2.]"), "451: unexpected token at '2.]'");
    assert_eq!(err("[1e5e]"), "451: unexpected token at '1e5e]'");
    assert_eq!(err("{\"a\":1.}"), "859: unexpected token at '{\"a\":1.}'");
    assert_eq!(err("[-12x]"), "451: unexpected token at 'x]'");
    assert_eq!(
        run_with("[1.5e3,-2,0]", false, true).unwrap(),
        "[f1.5e3,i-2,i0]"
    );
}

#[test]
fn nesting_limit() {
    assert_eq!(
        err(&("[".repeat(101) + &"]".repeat(101))),
        "nesting of 101 is too deep"
    );
    assert!(run(&("[".repeat(100) + &"]".repeat(100)), false).is_ok());
}

#[test]
fn unescape_quirks() {
    let un = |s: &str| {
        let mut out = Vec::new();
        unescape(s.as_bytes(), 0, s.len(), &mut out).map(|_| out)
    };
    assert_eq!(un("a\\nb\\x\\/").unwrap(), b"a\nbx/");
    assert_eq!(un("\\u00e9").unwrap(), "é".as_bytes());
    assert_eq!(un("\\ud83d\\ude00").unwrap(), "😀".as_bytes());
    assert_eq!(un("\\ud800\\x1234").unwrap(), b"?x1234");
    assert_eq!(un("\\udc00").unwrap(), b"\xed\xb0\x80");
    assert_eq!(un("ab\\ud800").unwrap_err(), UnescapeError { at: 0 });
}

#[test]
fn find_backslash_finds_the_first_in_range() {
    // Every start, end and backslash position around the 16-byte blocks and the hand-off
    // to memchr after 64 bytes.
    for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 80, 200] {
        for at in (0..len).chain([usize::MAX]) {
            let mut src = vec![b'a'; len];
            if at != usize::MAX {
                src[at] = b'\\';
            }
            for from in [0, 1, 7, 16, 50].into_iter().filter(|&f| f <= len) {
                for end in [len, len.saturating_sub(1), len.saturating_sub(20)] {
                    if end < from {
                        continue;
                    }
                    let naive = src[from..end]
                        .iter()
                        .position(|&b| b == b'\\')
                        .map(|k| from + k);
                    assert_eq!(
                        super::string::find_backslash(&src, from, end),
                        naive,
                        "len {len} at {at} from {from} end {end}"
                    );
                }
            }
        }
    }
    let two = b"ab\\cd\\";
    assert_eq!(super::string::find_backslash(two, 0, two.len()), Some(2));
    assert_eq!(super::string::find_backslash(two, 3, two.len()), Some(5));
}

/// `parse_float_fast` on a literal the number machine accepts as a float.
fn float_fast(text: &[u8]) -> Option<f64> {
    use super::number::{scan_number, NumberScan};
    match scan_number(text, 0) {
        NumberScan::Float(end, decimal) if end == text.len() => parse_float_fast(text, &decimal),
        other => panic!(
            "{:?} is no float literal: {other:?}",
            String::from_utf8_lossy(text)
        ),
    }
}

#[test]
fn numbers() {
    assert_eq!(parse_int_fast(b"-123"), Some(-123));
    assert_eq!(parse_int_fast(b"1234567890123456789"), None);
    assert_eq!(float_fast(b"1.5"), Some(1.5));
    assert_eq!(
        float_fast(b"-0.0").map(f64::to_bits),
        Some((-0.0f64).to_bits())
    );
    assert_eq!(float_fast(b"1e400"), None);
    assert_eq!(float_fast(b"1e-400"), None);
    assert_eq!(float_fast(b"0e-400"), Some(0.0));
    assert_eq!(float_fast(b"0.000e-400"), Some(0.0));
    assert_eq!(float_fast(b"1.000000000000000000001"), None);
    assert_eq!(
        float_fast(b"12345678.123456789"),
        Some(12_345_678.123_456_79)
    );
    assert_eq!(float_fast(b"12345678.1234567891"), None);
    assert_eq!(float_fast(b"-1.7976931348623157E+308"), Some(-f64::MAX));
}

/// The fast conversion rounds exactly as Rust's own (correctly rounded) parser on
/// pseudo-random literals of up to 17 digits across the whole exponent range, the kind
/// canada.json is full of; the Ruby specs check the same against Ruby's strtod.
#[test]
fn float_conversion_is_correctly_rounded() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..200_000 {
        let digits = 1 + (next() % 17) as usize;
        let mantissa: String = (0..digits)
            .map(|i| {
                let d = (next() % 10) as u8;
                (b'0' + if i == 0 { d.max(1) } else { d }) as char
            })
            .collect();
        let point = (next() % digits as u64) as usize + 1;
        let mut text = format!("{}.{}", &mantissa[..point], &mantissa[point..]);
        if point == digits {
            text.push('0');
        }
        match next() % 3 {
            0 => {}
            1 => text = format!("-{text}"),
            _ => text = format!("{text}e{}", (next() % 640) as i64 - 330),
        }
        let expected: f64 = text.parse().unwrap();
        let fast = float_fast(text.as_bytes());
        if expected.is_finite() && expected.abs() >= f64::MIN_POSITIVE {
            let digits = text.split(['e', 'E']).next().unwrap();
            let digits = digits.bytes().filter(u8::is_ascii_digit).count();
            if digits <= 17 {
                assert_eq!(fast.map(f64::to_bits), Some(expected.to_bits()), "{text}");
                continue;
            }
        }
        assert!(
            fast.is_none_or(|f| f.to_bits() == expected.to_bits()),
            "{text}"
        );
    }
    // Doubles printed to 17 digits and nudged by one in the last digit, where an
    // approximation off by a bit would show; and exact ties between two doubles.
    for _ in 0..100_000 {
        let double = f64::from_bits(next());
        if !double.is_finite() || double.abs() < f64::MIN_POSITIVE {
            continue;
        }
        let printed = format!("{double:.16e}");
        let (digits, exponent) = printed.split_once('e').unwrap();
        let last = digits.as_bytes()[digits.len() - 1] - b'0';
        let nudged = (last as i64 + (next() % 3) as i64 - 1).clamp(0, 9);
        let text = format!("{}{}e{}", &digits[..digits.len() - 1], nudged, exponent);
        let expected: f64 = text.parse().unwrap();
        if expected.is_finite() && expected.abs() >= f64::MIN_POSITIVE {
            let fast = float_fast(text.as_bytes()).map(f64::to_bits);
            assert_eq!(fast, Some(expected.to_bits()), "{text}");
        }
    }
    for text in [
        "9007199254740993.0",
        "9007199254740995.0",
        "18014398509481986e0",
        "18014398509481990e0",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "4.4501477170144023e-308",
        "3.0000000000000004e-1",
        "1e22",
        "1e23",
        "8.0e-5",
        "123456789012345.67e-3",
    ] {
        let expected: f64 = text.parse().unwrap();
        assert_eq!(
            float_fast(text.as_bytes()).map(f64::to_bits),
            Some(expected.to_bits()),
            "{text}"
        );
    }
}

#[test]
fn number_machines() {
    use super::number::{scan_number, NumberScan};
    let scan = |s: &str| scan_number(s.as_bytes(), 0);
    let float = |end, negative, digits, mantissa, exponent| {
        NumberScan::Float(
            end,
            Decimal {
                negative,
                digits,
                mantissa,
                exponent,
            },
        )
    };
    assert_eq!(scan("1.5,"), float(3, false, 2, 15, Some(-1)));
    assert_eq!(scan("-0.0e+1]"), float(7, true, 2, 0, Some(0)));
    assert_eq!(scan("1e5"), float(3, false, 1, 1, Some(5)));
    assert_eq!(
        scan("-120.0045E-12,"),
        float(13, true, 7, 1_200_045, Some(-16))
    );
    assert_eq!(scan("1e1234567"), float(9, false, 1, 1, None));
    assert_eq!(
        scan("12345678901234.5678901e-3 "),
        float(
            25,
            false,
            21,
            123_456_789_012_345_678_901_u128 as u64,
            Some(-10)
        )
    );
    assert_eq!(scan("1.5-2"), NumberScan::Integer(1, Some(1)));
    assert_eq!(scan("1.5e"), NumberScan::Integer(1, Some(1)));
    assert_eq!(scan("1.5.3"), NumberScan::Integer(1, Some(1)));
    assert_eq!(scan("2."), NumberScan::Integer(1, Some(2)));
    assert_eq!(scan("-12x"), NumberScan::Integer(3, Some(-12)));
    assert_eq!(scan("-0"), NumberScan::Integer(2, Some(0)));
    assert_eq!(
        scan("-123456789012345678,"),
        NumberScan::Integer(19, Some(-123_456_789_012_345_678))
    );
    assert_eq!(scan("1234567890123456789"), NumberScan::Integer(19, None));
    // Every run length against every place a run can end inside an eight-byte word.
    for len in 1..=18 {
        for pad in 0..9 {
            let digits: String = (0..len)
                .map(|i| (b'1' + (i * 7 % 9) as u8) as char)
                .collect();
            let text = format!("{digits}{}", ",".repeat(pad));
            assert_eq!(
                scan(&text),
                NumberScan::Integer(len, Some(digits.parse().unwrap())),
                "{text}"
            );
            let text = format!("-0.{digits}{}", "]".repeat(pad));
            assert_eq!(
                scan(&text),
                float(
                    len + 3,
                    true,
                    len + 1,
                    digits.parse().unwrap(),
                    Some(-(len as i64))
                ),
                "{text}"
            );
        }
    }
    assert_eq!(scan("01"), NumberScan::Invalid);
    assert_eq!(scan("-"), NumberScan::Invalid);
    assert_eq!(scan("-a"), NumberScan::Invalid);
}

#[test]
fn strings_and_comments() {
    assert_eq!(
        scan_string(b"\"a\\u00e9\\x\xff\"", 0),
        Some(StringScan {
            end: 11,
            escaped: true
        })
    );
    assert_eq!(
        scan_string(b"\"abcdefghijklmnop\"", 0).map(|s| s.end),
        Some(17)
    );
    assert_eq!(scan_string(b"\"a\tb\"", 0), None);
    assert_eq!(scan_string(b"\"a\\\tb\"", 0), None);
    assert_eq!(scan_string(b"\"\\u12g4\"", 0), None);
    assert_eq!(scan_string(b"\"abc", 0), None);
    assert_eq!(run("/**/[/***/1/*/ */]", false).unwrap(), "[i1]");
    assert_eq!(err("[/*]"), "451: unexpected token at ''");
    assert_eq!(
        err("{\"a\":1 /x}"),
        "859: unexpected token at '{\"a\":1 /x}'"
    );
}

#[test]
fn excerpt_stops_at_nul() {
    assert_eq!(excerpt(b"ab\0cd", Some(1)), b"b");
    assert_eq!(excerpt(b"ab", Some(2)), b"");
    assert_eq!(excerpt(b"ab", None), b"");
}

/// Whitespace runs of every length and mix (the 8- and 16-byte skips) read like one space,
/// and a run ending at a bad byte or a comment still fails or reads where it should.
#[test]
fn whitespace_runs_of_any_length() {
    let kinds = [" ", "\t", "\n", "\r", " \t", "\r\n"];
    for len in 0..40 {
        for (k, kind) in kinds.iter().enumerate() {
            let ws: String = kind.repeat(len + k).chars().take(len).collect();
            let doc = format!("{ws}{{{ws}\"a\"{ws}:{ws}[{ws}1{ws},{ws}2{ws}]{ws}}}{ws}");
            assert_eq!(run(&doc, false), run("{\"a\":[1,2]}", false), "{doc:?}");
            let commented = format!("[{ws}/* c */{ws}1{ws}]");
            assert_eq!(run(&commented, false), run("[1]", false), "{commented:?}");
            let bad = format!("[1,{ws}x]");
            let expected = Err("451: unexpected token at 'x]'".to_string());
            assert_eq!(run(&bad, false), expected, "{bad:?}");
        }
    }
}

/// The string scan, which skips plain bytes sixteen and eight at a time, stops at every
/// quote, backslash and control character wherever it falls in a block, and takes bytes
/// >= 0x80 (signed negative in SIMD lanes) as plain.
#[test]
fn string_scan_finds_specials_at_any_offset() {
    for len in 0..40 {
        for plain in [b'a', b' ', 0x7f, 0x80, 0xff] {
            let mut doc = vec![b'"'];
            doc.extend(std::iter::repeat_n(plain, len));
            let mut closed = doc.clone();
            closed.extend_from_slice(b"\" ");
            assert_eq!(
                scan_string(&closed, 0),
                Some(StringScan {
                    end: len + 1,
                    escaped: false
                })
            );
            let mut escape = doc.clone();
            escape.extend_from_slice(b"\\n\"");
            assert_eq!(
                scan_string(&escape, 0),
                Some(StringScan {
                    end: len + 3,
                    escaped: true
                })
            );
            for control in [0x00, 0x0a, 0x1f] {
                let mut bad = doc.clone();
                bad.extend_from_slice(&[control, b'"']);
                assert_eq!(scan_string(&bad, 0), None, "{len} {control}");
            }
            assert_eq!(scan_string(&doc, 0), None);
        }
    }
}

#[test]
fn hex_digits_reads_what_from_str_radix_reads() {
    // Every byte in every position, the others a valid digit each.
    for position in 0..4 {
        for byte in 0..=255u8 {
            let mut digits = *b"09aF";
            digits[position] = byte;
            let reference = std::str::from_utf8(&digits)
                .ok()
                .filter(|text| text.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|text| u32::from_str_radix(text, 16).ok());
            assert_eq!(super::string::hex_digits(&digits), reference, "{digits:?}");
        }
    }
}
