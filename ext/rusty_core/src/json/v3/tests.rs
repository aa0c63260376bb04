//! The walk against json 3.1.0's own answers (taken from the gem on Debian sid's Ruby
//! 3.3.8); spec/json compares the binding with the gem itself.

use super::position::{char_count, line_column, snippet, Snippet};
use super::*;

/// A sink that writes a compact rendering, checking the walk's stack accounting.
#[derive(Default)]
struct Text {
    stack: Vec<String>,
    /// The keys' texts by stack position, for paths.
    raw: Vec<String>,
}

impl Text {
    fn push(&mut self, s: String) -> Result<(), ()> {
        self.raw.push(s.clone());
        self.stack.push(s);
        Ok(())
    }
}

impl Sink for Text {
    type Error = ();
    fn null(&mut self) -> Result<(), ()> {
        self.push("null".into())
    }
    fn boolean(&mut self, v: bool) -> Result<(), ()> {
        self.push(v.to_string())
    }
    fn nan(&mut self) -> Result<(), ()> {
        self.push("NaN".into())
    }
    fn infinity(&mut self, negative: bool) -> Result<(), ()> {
        self.push(if negative { "-Inf" } else { "Inf" }.into())
    }
    fn integer(&mut self, text: &[u8], value: Option<i64>) -> Result<(), ()> {
        let s = String::from_utf8(text.to_vec()).unwrap();
        if let Some(v) = value {
            assert_eq!(v, s.parse::<i64>().unwrap(), "{s}");
        }
        self.push(format!("i{s}"))
    }
    fn float(&mut self, text: &[u8], value: FloatValue) -> Result<(), ()> {
        let s = String::from_utf8(text.to_vec()).unwrap();
        match value {
            Some(f) => self.push(format!("f{f:?}")),
            None => self.push(format!("strtod({s})")),
        }
    }
    fn string(&mut self, bytes: &[u8], key: bool) -> Result<(), ()> {
        let s = String::from_utf8_lossy(bytes).into_owned();
        self.push(if key {
            format!("k{s}")
        } else {
            format!("s{s}")
        })
    }
    fn array(&mut self, len: usize) -> Result<(), ()> {
        let items = self.stack.split_off(self.stack.len() - len);
        self.raw.truncate(self.raw.len() - len);
        self.push(format!("[{}]", items.join(",")))
    }
    fn object(&mut self, pairs: usize) -> Result<Option<usize>, ()> {
        let items = &self.stack[self.stack.len() - 2 * pairs..];
        let keys: Vec<&String> = items.iter().step_by(2).collect();
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].contains(k) {
                return Ok(Some(i));
            }
        }
        let items = self.stack.split_off(self.stack.len() - 2 * pairs);
        self.raw.truncate(self.raw.len() - 2 * pairs);
        let members: Vec<String> = items
            .chunks(2)
            .map(|kv| format!("{}:{}", kv[0], kv[1]))
            .collect();
        self.push(format!("{{{}}}", members.join(",")))?;
        Ok(None)
    }
}

/// The gem's message, line, column and json_path for `src`, or the rendering.
fn run(src: &[u8], options: Options) -> String {
    let mut sink = Text::default();
    match parse(src, &options, &mut sink, &mut Vec::new()) {
        Ok(()) => {
            assert_eq!(sink.stack.len(), 1);
            sink.stack.pop().unwrap()
        }
        Err(e) => {
            let path: String = e
                .path
                .iter()
                .map(|s| match s {
                    Segment::Index(i) => format!("[{i}]"),
                    Segment::Key(k) => format!(".{}", &sink.raw[*k][1..]),
                })
                .collect();
            let message = match e.kind {
                ErrorKind::Syntax(m) => {
                    let mut text = Vec::new();
                    snippet(src, e.at).write_to(&mut text);
                    m.format().replace("%s", &String::from_utf8_lossy(&text))
                }
                ErrorKind::DuplicateKey(k) => format!("duplicate key {:?}", &sink.raw[k][1..]),
                ErrorKind::Nesting(depth) => return format!("nesting of {depth} is too deep"),
                ErrorKind::Sink(()) => unreachable!(),
            };
            let (line, column) = line_column(src, e.at);
            format!("{message} at line {line} column {column} ${path}")
        }
    }
}

fn plain(src: &str) -> String {
    run(src.as_bytes(), Options::default())
}

#[test]
fn documents() {
    assert_eq!(
        plain(r#"{"a": [1, -2.5e1, true, null, "x\u00e9"]}"#),
        "{ka:[i1,f-25.0,true,null,sxé]}"
    );
    assert_eq!(plain(" [ ] "), "[]");
    assert_eq!(plain("{}"), "{}");
    assert_eq!(plain("-0"), "i-0");
    assert_eq!(
        plain("[1,]"),
        "unexpected character: ']' at line 1 column 4 $[1]"
    );
}

/// Every hex digit form, adjacent escapes (the unescape loop's no-search path) and each
/// UTF-8 length, against Rust's own decoding.
#[test]
fn unicode_escapes() {
    assert_eq!(
        plain(r#""\u0041\u00e9\u30B9\u30d1\ud83d\ude00z""#),
        "sAé\u{30b9}\u{30d1}\u{1f600}z"
    );
    assert_eq!(plain(r#""\uAbCd\"\\\/\n""#), "s\u{abcd}\"\\/\n");
    for bad in [r#""\u12g4""#, r#""\u:123""#, r#""\u@123""#, r#""\u12`4""#] {
        assert!(
            plain(bad).starts_with("incomplete unicode character escape sequence"),
            "{bad}"
        );
    }
}

/// Strings of random pieces (plain runs of every length up to past the 16-byte search
/// step, two-character escapes, `\u` escapes of each UTF-8 length, surrogate pairs), each
/// written escaped and as the text it stands for: the unescaper must give that text back
/// for every mix.
#[test]
fn random_escaped_strings_unescape_to_their_text() {
    let mut seed = 0xe5c_u64;
    let chars = [
        'a',
        'é',
        '\u{30b9}',
        '\u{1f600}',
        '<',
        '"',
        '\\',
        '/',
        '\n',
        '\t',
    ];
    for _ in 0..5_000 {
        let mut json = String::from("\"");
        let mut text = String::new();
        for _ in 0..crate::xorshift(&mut seed) % 12 {
            let c = chars[(crate::xorshift(&mut seed) % chars.len() as u64) as usize];
            match crate::xorshift(&mut seed) % 4 {
                0 => {
                    let run = (crate::xorshift(&mut seed) % 40) as usize;
                    json.extend(std::iter::repeat_n('x', run));
                    text.extend(std::iter::repeat_n('x', run));
                }
                1 if c.len_utf16() == 2 => {
                    let mut units = [0u16; 2];
                    c.encode_utf16(&mut units);
                    json.push_str(&format!("\\u{:04x}\\u{:04X}", units[0], units[1]));
                    text.push(c);
                }
                1 => {
                    json.push_str(&format!("\\u{:04x}", c as u32));
                    text.push(c);
                }
                2 => {
                    let escaped = match c {
                        '"' => "\\\"",
                        '\\' => "\\\\",
                        '/' => "\\/",
                        '\n' => "\\n",
                        '\t' => "\\t",
                        _ => "\\b",
                    };
                    json.push_str(escaped);
                    text.push(if escaped == "\\b" { '\u{8}' } else { c });
                }
                _ if c == '"' || c == '\\' || c == '\n' || c == '\t' => {}
                _ => {
                    json.push(c);
                    text.push(c);
                }
            }
        }
        json.push('"');
        assert_eq!(plain(&json), format!("s{text}"), "{json}");
    }
}

#[test]
fn errors_with_positions_and_paths() {
    let cases = [
        ("tru}", "unexpected token 'tru}' at line 1 column 1 $"),
        (
            "[1,2,tru}]",
            "unexpected token 'tru}]' at line 1 column 6 $[2]",
        ),
        (
            r#"{"a": {"b": [1, 2, x]}}"#,
            "unexpected character: 'x]}}' at line 1 column 20 $.a.b[2]",
        ),
        (
            r#"{"a":1,"a":2}"#,
            r#"duplicate key "a" at line 1 column 1 $.a"#,
        ),
        (
            r#"{"b":0,"a":1,"c":{"x":1},"a":2,"d":3}"#,
            r#"duplicate key "a" at line 1 column 1 $.a"#,
        ),
        (
            r#"[1,{"x":[{"k":1,"k":2}]}]"#,
            r#"duplicate key "k" at line 1 column 10 $[1].x[0].k"#,
        ),
        ("[1] /* c */", "unexpected token '/*' at line 1 column 5 $"),
        ("[01]", "invalid number: '01]' at line 1 column 2 $[0]"),
        ("[1.]", "invalid number: '1.]' at line 1 column 2 $[0]"),
        (
            "\"abc",
            "unexpected end of input, expected closing \" at line 1 column 5 $",
        ),
        (
            "[\"a\nb\"]",
            "invalid ASCII control character in string: \nb\"] at line 1 column 4 $[0]",
        ),
        (
            "{\"é\": x}",
            "unexpected character: 'x}' at line 1 column 7 $.é",
        ),
        (
            r#"{"a" 1}"#,
            "expected ':' after object key at line 1 column 6 $.a",
        ),
        (
            r#"{"a":1 "b"}"#,
            "expected ',' or '}' after object value, got: '\"b\"}' at line 1 column 8 $.a",
        ),
        (
            "{1:2}",
            "expected object key, got '1:2}' at line 1 column 2 $",
        ),
        (
            r#"{"a":1, 2}"#,
            "expected object key, got: '2}' at line 1 column 9 $",
        ),
        ("", "unexpected end of input at line 1 column 1 $"),
        ("  ", "unexpected end of input at line 1 column 3 $"),
        (
            "[1",
            "expected ',' or ']' after array value at line 1 column 3 $[0]",
        ),
        (
            r#"{"a":1"#,
            "expected ',' or '}' after object value, got: EOF at line 1 column 7 $.a",
        ),
        ("-", "invalid number: '-' at line 1 column 1 $"),
        ("- 1", "invalid number: '-' at line 1 column 1 $"),
        ("NaN", "unexpected token 'NaN' at line 1 column 1 $"),
        (
            "-Infinity",
            "invalid number: '-Infinity' at line 1 column 1 $",
        ),
        (
            "[1]\n\n  x",
            "unexpected token at end of stream 'x' at line 3 column 3 $",
        ),
        (
            "\"\\u12\"",
            "incomplete unicode character escape sequence at '\\u12\"' at line 1 column 2 $",
        ),
        (
            "\"ab\\ud800x\"",
            "incomplete surrogate pair at 'ab\\ud800x\"' at line 1 column 2 $",
        ),
        (
            "\"ab\\udc00x\"",
            "unpaired trailing surrogate at 'ab\\udc00x\"' at line 1 column 2 $",
        ),
        (
            "\"\\ud800\\u0041\"",
            "invalid surrogate pair at '\\ud800\\u0041\"' at line 1 column 2 $",
        ),
        (
            "\"x\\n\\ud800\"",
            "incomplete surrogate pair at '\\ud800\"' at line 1 column 5 $",
        ),
        (
            "\"\\x\"",
            "invalid escape character in string: '\\x\"' at line 1 column 2 $",
        ),
        (
            "\"a\tb\"",
            "invalid ASCII control character in string: \tb\" at line 1 column 3 $",
        ),
        (
            "\"a\\\nb\"",
            "Invalid unescaped newline character (\\n) in string: '\\' at line 1 column 3 $",
        ),
        (
            "\"ab\\\u{0}\"",
            "Invalid unescaped NULL character (\\0) in string: '\\' at line 1 column 4 $",
        ),
        ("\u{0}", "unexpected NULL byte:  at line 1 column 1 $"),
        (
            "[1]\u{0}",
            "unexpected token at end of stream  at line 1 column 4 $",
        ),
        (
            "[\"日本\", 日本]",
            "unexpected character: '日本]' at line 1 column 8 $[1]",
        ),
        ("[/x]", "unexpected token '/x]' at line 1 column 2 $"),
        ("[", "unexpected end of input at line 1 column 2 $[0]"),
        ("{", "expected object key, got EOF at line 1 column 2 $"),
        (
            "[1,2]]",
            "unexpected token at end of stream ']' at line 1 column 6 $",
        ),
        (
            "truex",
            "unexpected token at end of stream 'x' at line 1 column 5 $",
        ),
        (
            "[truex]",
            "expected ',' or ']' after array value at line 1 column 6 $[0]",
        ),
        (
            "\"\\ud800\\\"",
            "unexpected end of input, expected closing \" at line 1 column 10 $",
        ),
        (
            "\"\\ud800\\\\u1234\"",
            "incomplete surrogate pair at '\\ud800\\\\u1234\"' at line 1 column 2 $",
        ),
        (
            "[1,\r\n2,\r\nx]",
            "unexpected character: 'x]' at line 3 column 1 $[2]",
        ),
        (
            "[1,\r2,\rx]",
            "unexpected character: 'x]' at line 1 column 8 $[2]",
        ),
        ("\n", "unexpected end of input at line 2 column 1 $"),
        (
            "0e5x",
            "unexpected token at end of stream 'x' at line 1 column 4 $",
        ),
    ];
    for (src, expected) in cases {
        assert_eq!(plain(src), expected, "{src:?}");
    }
}

#[test]
fn options() {
    let with = |f: fn(&mut Options)| {
        let mut o = Options::default();
        f(&mut o);
        o
    };
    let comments = with(|o| o.allow_comments = true);
    assert_eq!(run(b"[1/*x*/,2]//y", comments), "[i1,i2]");
    assert_eq!(
        run(b"[1]/*", comments),
        "unterminated comment, expected closing '*/' at line 1 column 4 $"
    );
    assert_eq!(
        run(b"[1]/x", comments),
        "unexpected token '/x' at line 1 column 4 $"
    );
    assert_eq!(
        run(b"[1,/", comments),
        "unexpected token '/' at line 1 column 4 $[1]"
    );
    let trailing = with(|o| o.allow_trailing_comma = true);
    assert_eq!(run(b"[1, ]", trailing), "[i1]");
    assert_eq!(run(br#"{"a":1, }"#, trailing), "{ka:i1}");
    assert_eq!(
        run(b"[ ,]", trailing),
        "unexpected character: ',]' at line 1 column 3 $[0]"
    );
    let nan = with(|o| o.allow_nan = true);
    assert_eq!(run(b"[NaN,Infinity,-Infinity]", nan), "[NaN,Inf,-Inf]");
    assert_eq!(
        run(b"-Inf", nan),
        "unexpected token '-Inf' at line 1 column 1 $"
    );
    assert_eq!(
        run(b"[-1.I]", nan),
        "unexpected token '-1.I]' at line 1 column 2 $[0]"
    );
    assert_eq!(
        run(b"[-NaN]", nan),
        "invalid number: '-NaN]' at line 1 column 2 $[0]"
    );
    let lax = with(|o| {
        o.allow_control_characters = true;
        o.allow_invalid_escape = true
    });
    assert_eq!(run(b"\"a\\\x01\tb\\q\"", lax), "sa\u{1}\tbq");
    let control = with(|o| o.allow_control_characters = true);
    assert_eq!(
        run(b"\"ab\\\x01\"", control),
        "invalid escape character in string: '\\\u{1}\"' at line 1 column 4 $"
    );
    let nesting = with(|o| o.max_nesting = 1);
    assert_eq!(run(b"[[ ]]", nesting), "[[]]");
    assert_eq!(run(b"[[1]]", nesting), "nesting of 2 is too deep");
    assert_eq!(
        run(b"[1]", with(|o| o.max_nesting = -1)),
        "nesting of 1 is too deep"
    );
    assert_eq!(
        run(&[b'['; 1000], with(|o| o.max_nesting = 0)),
        "unexpected end of input at line 1 column 1001 $".to_string() + &"[0]".repeat(1000)
    );
}

#[test]
fn numbers() {
    let cases = [
        ("0e999999999999", "finf"),
        ("1.5e-99999999999999999999", "f0.0"),
        ("1e2147483647", "finf"),
        ("1e-2147483649", "f0.0"),
        ("1e-324", "strtod(1e-324)"),
        ("1e-400", "f0.0"),
        ("1e-310", "strtod(1e-310)"),
        ("1e-307", "f1e-307"),
        ("1234567890123456789e-400", "f0.0"),
        ("1234567890123456789e400", "strtod(1234567890123456789e400)"),
        ("0.1234567890123456789", "strtod(0.1234567890123456789)"),
        ("17976931348623157e292", "f1.7976931348623157e308"),
        ("17976931348623159e292", "finf"),
        ("-0.0", "f-0.0"),
        ("-0e-400", "f-0.0"),
        ("123456789012345678", "i123456789012345678"),
        // Where json 3.1.0's exponent arithmetic decides (saturation at i32::MAX, a
        // wrapping subtraction, infinity from i32::MAX on).
        ("0e2147483647", "finf"),
        ("0e2147483646", "f0.0"),
        ("0.0e2147483647", "f0.0"),
        ("0.0e99999999999999999999", "f0.0"),
        ("0e99999999999999999999", "finf"),
        ("0.0e9223372036854775807", "finf"),
        ("0.05e-9223372036854775807", "finf"),
        ("0.05e-9223372036854775806", "f0.0"),
        (
            "0.000000000000000000001e00000000000000000000001",
            "strtod(0.000000000000000000001e00000000000000000000001)",
        ),
        ("1000000000000000000000e2147483647", "finf"),
        (
            "1000000000000000000000e2147483646",
            "strtod(1000000000000000000000e2147483646)",
        ),
        ("123.456789e000000000000000000001", "finf"),
        ("-0.1e000000000000000000001", "f-inf"),
        ("4.9406564584124654e-324", "strtod(4.9406564584124654e-324)"),
        ("12345678e-315", "f1.2345678e-308"),
        ("2.2250738585072011e-308", "f2.225073858507201e-308"),
    ];
    for (src, expected) in cases {
        assert_eq!(plain(src), expected, "{src:?}");
    }
}

/// Integers of up to 18 digits (every one a Fixnum) take their value from the scan; longer
/// ones go to Ruby's converter, which alone can make a Bignum.
#[test]
fn integers_up_to_18_digits_take_the_scanned_value() {
    let value = |src: &str, negative: bool| {
        let n = super::number::scan(src.as_bytes(), 0, negative).unwrap();
        super::number::integer_value(&n)
    };
    assert_eq!(value("0", true), Some(0));
    assert_eq!(value("505874924095815681", false), Some(505874924095815681));
    assert_eq!(value("999999999999999999", true), Some(-999999999999999999));
    assert_eq!(value("1000000000000000000", false), None);
    assert_eq!(value("4611686018427387903", false), None);
}

#[test]
fn snippets_cut_whole_characters() {
    let quoted = |s: &[u8]| match snippet(s, 0) {
        Snippet::Quoted(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    };
    let a = |n: usize| "a".repeat(n);
    assert_eq!(
        quoted(format!("{}éé", a(28)).as_bytes()),
        format!("{}éé", a(28))
    );
    assert_eq!(
        quoted(format!("{}éé", a(29)).as_bytes()),
        format!("{}é", a(29))
    );
    assert_eq!(quoted(format!("{}éé", a(31)).as_bytes()), a(31));
    assert_eq!(quoted(format!("{}😀😀", a(29)).as_bytes()), a(29));
    let mut bytes = a(30).into_bytes();
    bytes.extend_from_slice(b"\x80\x80\x80]");
    assert_eq!(quoted(&bytes), a(29));
    let mut bytes = a(31).into_bytes();
    bytes.extend_from_slice(b"\xff]");
    assert_eq!(snippet(&bytes, 0), Snippet::Quoted(&bytes[..32]));
    assert_eq!(
        snippet(b"\x80".repeat(40).as_slice(), 0),
        Snippet::Raw(&[0x80; 40])
    );
    assert_eq!(snippet(b"ab", 2), Snippet::Eof);
    assert_eq!(snippet(b"a\nb\x00c", 1), Snippet::Raw(b"\nb"));
}

#[test]
fn columns_count_characters_as_ruby_does() {
    assert_eq!(char_count("日本".as_bytes()), 2);
    assert_eq!(char_count(b"\xE6\x97\x97\x97"), 2);
    assert_eq!(char_count(b"\xE6AB"), 3);
    assert_eq!(char_count(b"\xED\xA0\x80"), 3);
    assert_eq!(char_count(b"\xF4\x90\x80\x80"), 4);
    assert_eq!(char_count(b"\xC0\xAF"), 2);
    assert_eq!(char_count(b"\xE6\x97"), 2);
    assert_eq!(char_count("abcdefghé".as_bytes()), 9);
    assert_eq!(line_column(b"a\nbc", 3), (2, 2));
    assert_eq!(line_column(b"a\n", 1), (1, 2));
}

#[test]
fn random_documents_never_panic() {
    let mut seed = 0x5eed_u64;
    let alphabet = b"[]{}:,\"\\/*-+.0123456789eEtruefalsnNIy \n\t\r\x00\x01\xc3\xa9\xff";
    for _ in 0..20_000 {
        let len = (crate::xorshift(&mut seed) % 24) as usize;
        let doc: Vec<u8> = (0..len)
            .map(|_| alphabet[(crate::xorshift(&mut seed) % alphabet.len() as u64) as usize])
            .collect();
        for options in [
            Options::default(),
            Options {
                allow_comments: true,
                allow_nan: true,
                allow_trailing_comma: true,
                allow_control_characters: true,
                allow_invalid_escape: true,
                max_nesting: 3,
            },
        ] {
            let _ = run(&doc, options);
        }
    }
}
