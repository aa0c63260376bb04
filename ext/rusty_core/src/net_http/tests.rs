use super::form::*;
use super::header::capitalize;

#[test]
fn encodes_like_the_stdlib() {
    assert_eq!(encode_component(b"a b~*-._Z09"), b"a+b%7E*-._Z09");
    assert_eq!(encode_component(b"\xC3\xA9&=%+"), b"%C3%A9%26%3D%25%2B");
    assert_eq!(encode_component(b""), b"");
    assert_eq!(encode_component(b"\x00\xff"), b"%00%FF");
}

#[test]
fn every_byte_round_trips() {
    let all: Vec<u8> = (0..=255).collect();
    let encoded = encode_component(&all);
    assert_eq!(encoded.len(), encoded_len(&all));
    assert!(!has_invalid_percent(&encoded));
    assert_eq!(decode_component(&encoded), all);
}

#[test]
fn decodes_plus_and_hex_in_either_case() {
    assert_eq!(decode_component(b"a+b%41%e3%81%82"), b"a bA\xe3\x81\x82");
    assert_eq!(decode_component(b"%Zz%4%"), b"%Zz%4%");
    assert_eq!(decode_component(b"%%41"), b"%A");
    assert_eq!(decode_component(b"%aF%Af"), b"\xaf\xaf");
}

#[test]
fn finds_invalid_percent_escapes() {
    assert!(!has_invalid_percent(b"abc%20%fF"));
    assert!(has_invalid_percent(b"%"));
    assert!(has_invalid_percent(b"a%2"));
    assert!(has_invalid_percent(b"%g0"));
    assert!(has_invalid_percent(b"%%41"));
    assert!(!has_invalid_percent(b""));
}

fn fields(input: &[u8], sep: &[u8], isindex: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    split_fields(input, sep, isindex)
        .into_iter()
        .map(|f| (f.key.to_vec(), f.value.to_vec()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    list.iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

#[test]
fn splits_fields_like_each_line_and_partition() {
    assert_eq!(
        fields(b"a=1&b&=&&c=x=y&", b"&", false),
        pairs(&[("a", "1"), ("b", ""), ("", ""), ("", ""), ("c", "x=y")])
    );
    assert_eq!(fields(b"", b"&", false), pairs(&[]));
    assert_eq!(fields(b"&", b"&", false), pairs(&[("", "")]));
    assert_eq!(
        fields(b"a;;b=2", b";;", false),
        pairs(&[("a", ""), ("b", "2")])
    );
    assert_eq!(fields(b"aaa", b"aa", false), pairs(&[("", ""), ("a", "")]));
}

#[test]
fn isindex_applies_to_the_first_field_only() {
    assert_eq!(fields(b"q&r", b"&", true), pairs(&[("", "q"), ("r", "")]));
    assert_eq!(
        fields(b"k=v&r", b"&", true),
        pairs(&[("k", "v"), ("r", "")])
    );
}

/// `capitalize_into` against a plain byte loop of `to_ascii_uppercase` and
/// `to_ascii_lowercase`: every name of up to 4 bytes from an alphabet of `-`, letters and
/// the bytes beside the letters' ranges, before and after other parts, and random names
/// of every ASCII and some other bytes.
#[test]
fn capitalizes_as_the_byte_loop_does() {
    use super::header::{capitalize_into, capitalized_len};
    fn oracle(name: &[u8]) -> Vec<u8> {
        let mut previous = b'-';
        let all: Vec<u8> = name
            .iter()
            .map(|&b| {
                let c = if previous == b'-' {
                    b.to_ascii_uppercase()
                } else {
                    b.to_ascii_lowercase()
                };
                previous = b;
                c
            })
            .collect();
        all[..capitalized_len(name)].to_vec()
    }
    fn check(name: &[u8]) {
        let mut out = vec![0; capitalized_len(name)];
        capitalize_into(name, &mut out);
        assert_eq!(out, oracle(name), "{:?}", String::from_utf8_lossy(name));
    }
    let alphabet = b"-aZ@[`{9\x80";
    let mut names = vec![Vec::new()];
    for _ in 0..4 {
        let longer: Vec<Vec<u8>> = names
            .iter()
            .flat_map(|n| alphabet.iter().map(move |&b| [n.as_slice(), &[b]].concat()))
            .collect();
        names.extend(longer);
    }
    names.sort();
    names.dedup();
    for name in &names {
        for pad in [
            "",
            "x",
            "x-",
            "-",
            "abcdefg",
            "abcdefg-",
            "ABCDEFGH",
            "abcdefgh-",
            "abcdefghijk-",
        ] {
            check(&[pad.as_bytes(), name].concat());
            check(&[name.as_slice(), pad.as_bytes()].concat());
        }
    }
    let mut seed = 0x243F_6A88_85A3_08D3u64;
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % 40) as usize;
        let name: Vec<u8> = (0..len)
            .map(|i| {
                let r = (seed.rotate_left(i as u32 * 5) % 160) as u8;
                if r >= 128 {
                    b'-'
                } else {
                    r
                }
            })
            .collect();
        check(&name);
    }
}

#[test]
fn capitalizes_header_names() {
    assert_eq!(capitalize(b"content-type").unwrap(), b"Content-Type");
    assert_eq!(capitalize(b"X-REQUEST-id").unwrap(), b"X-Request-Id");
    assert_eq!(capitalize(b"--a").unwrap(), b"--A");
    assert_eq!(capitalize(b"a--b--").unwrap(), b"A--B");
    assert_eq!(
        capitalize(b"www-authenticate2x").unwrap(),
        b"Www-Authenticate2x"
    );
    assert_eq!(capitalize(b""), None);
    assert_eq!(capitalize(b"---"), None);
}

mod response {
    use super::super::response::*;

    fn status(line: &str) -> Option<(Option<String>, String, Option<String>)> {
        let bytes = line.as_bytes();
        let text = |r: std::ops::Range<usize>| String::from_utf8_lossy(&bytes[r]).into_owned();
        parse_status_line(bytes).map(|s| (s.version.map(text), text(s.code), s.message.map(text)))
    }

    fn some(
        v: Option<&str>,
        c: &str,
        m: Option<&str>,
    ) -> Option<(Option<String>, String, Option<String>)> {
        Some((v.map(String::from), c.to_string(), m.map(String::from)))
    }

    #[test]
    fn status_lines() {
        assert_eq!(
            status("HTTP/1.1 200 OK"),
            some(Some("1.1"), "200", Some("OK"))
        );
        assert_eq!(status("http/10.20\t404"), some(Some("10.20"), "404", None));
        assert_eq!(status("HTTP 200  "), some(None, "200", Some("")));
        assert_eq!(
            status("HTTP/1.1 200 \t Not  Found \r"),
            some(Some("1.1"), "200", Some("Not  Found \r"))
        );
        assert_eq!(status("HTTP/1.1 2000 OK"), None);
        assert_eq!(status("HTTP/1.1 20 OK"), None);
        assert_eq!(status("HTTP/1. 200 OK"), None);
        assert_eq!(status("HTTP/1.1.1 200 OK"), None);
        assert_eq!(status("HTTP/1.1200 OK"), None);
        assert_eq!(status("HTTP/ 200 OK"), None);
        assert_eq!(status("HTTP/1.1 200 a\nb"), None);
        assert_eq!(
            status("HTTP/1.1 200\n\nb"),
            some(Some("1.1"), "200", Some("b"))
        );
        assert_eq!(status(" HTTP/1.1 200 OK"), None);
        assert_eq!(status("HTTP"), None);
        assert_eq!(status(""), None);
    }

    #[test]
    fn header_lines() {
        let line = parse_header_line(b"Content-Type :  text/html ; x \r\n").unwrap();
        assert_eq!(line.name, Some(&b"Content-Type"[..]));
        assert_eq!(line.value, Some(&b"text/html ; x"[..]));
        assert!(!line.leading_space && !line.leading_tab);
        let line = parse_header_line(b" \0folded: x\0 \n").unwrap();
        assert!(line.leading_space);
        assert_eq!(line.stripped, b"folded: x");
        assert_eq!(parse_header_line(b" \t\r\n"), None);
        let line = parse_header_line(b"no colon\n").unwrap();
        assert_eq!((line.name, line.value), (Some(&b"no colon"[..]), None));
        let line = parse_header_line(b"\0\n").unwrap();
        assert_eq!((line.name, line.value), (None, None));
        let line = parse_header_line(b":v:w\n").unwrap();
        assert_eq!((line.name, line.value), (Some(&b""[..]), Some(&b"v:w"[..])));
    }
}

#[test]
fn request_heads() {
    use super::header::{push_field_line, request_line};
    let mut out = request_line(b"GET", b"/a?b", b"1.1").unwrap();
    assert_eq!(out, b"GET /a?b HTTP/1.1\r\n");
    push_field_line(&mut out, b"x-a-b", [&b"1"[..], b"2"]);
    push_field_line(&mut out, b"---", []);
    assert_eq!(out, b"GET /a?b HTTP/1.1\r\nX-A-B: 1, 2\r\n: \r\n");
    assert_eq!(request_line(b"GET", b"/\r\n", b"1.1"), None);
    assert_eq!(request_line(b"GET\n", b"/", b"1.1"), None);
}

#[test]
fn an_empty_separator_gives_one_piece() {
    assert_eq!(fields(b"a=1&b", b"", false), pairs(&[("a", "1&b")]));
}

#[test]
fn chunk_size_lines() {
    use super::response::{chunk_size_digits, hex_u64};
    assert_eq!(chunk_size_digits(b"1a;ext=1"), Some(&b"1a"[..]));
    assert_eq!(chunk_size_digits(b"  x0F "), Some(&b"0F"[..]));
    assert_eq!(chunk_size_digits(b"-g"), None);
    assert_eq!(chunk_size_digits(b""), None);
    assert_eq!(hex_u64(b"1a"), Some(26));
    assert_eq!(hex_u64(b"ffffffffffffffff"), Some(u64::MAX));
    assert_eq!(hex_u64(b"00000000000000000001"), Some(1));
    assert_eq!(hex_u64(b"10000000000000000"), None);
}

#[test]
fn chunked_bodies_scan_whole_items() {
    use super::chunked::{scan, Phase};
    let text = b"5;x\r\nhello\r\n3\nabcXY0\r\nT: 1\r\n\r\nrest";
    let mut out = Vec::new();
    let mut phase = Phase::Size;
    let used = scan(text, &mut phase, |d| {
        out.extend_from_slice(d);
        true
    });
    assert_eq!(phase, Phase::Done);
    assert_eq!(&text[used..], b"rest");
    assert_eq!(out, b"helloabc");
    // Every prefix stops in front of an unfinished item; scanning on from there with
    // the rest gives the same body.
    for cut in 0..text.len() {
        let mut out = Vec::new();
        let mut phase = Phase::Size;
        let mut push = |d: &[u8]| {
            out.extend_from_slice(d);
            true
        };
        let first = scan(&text[..cut], &mut phase, &mut push);
        assert!(first <= cut);
        let second = scan(&text[first..], &mut phase, &mut push);
        assert_eq!(phase, Phase::Done, "cut {cut}");
        assert_eq!(first + second, used);
        assert_eq!(out, b"helloabc");
    }
}

#[test]
fn chunked_scan_stops_at_lines_it_does_not_take() {
    use super::chunked::{scan, Phase};
    for text in [
        &b"zz\r\n"[..],
        b"10000000000000000\r\n",
        b"8000000000000000\r\n",
        b"5\r\n",
    ] {
        let mut phase = Phase::Size;
        let used = scan(text, &mut phase, |_| true);
        let expected = if text == b"5\r\n" { 3 } else { 0 };
        assert_eq!(used, expected);
    }
    let mut phase = Phase::Size;
    assert_eq!(scan(b"3\r\nabc\r\n", &mut phase, |_| false), 3);
    assert_eq!(phase, Phase::Data(3));
}

#[test]
fn header_blocks() {
    use super::response::header_block;
    let head = b"A: 1\r\nB:2\n folded\r\n\tmore \r\nC:\r\n \r\nrest";
    let block = header_block(head).unwrap();
    assert_eq!(&head[block.consumed..], b"rest");
    let fields: Vec<(&[u8], &[u8], usize)> = block
        .fields
        .iter()
        .map(|(k, v, read_to)| (*k, &v[..], *read_to))
        .collect();
    // Each field is yielded once the next field's first line (or the end) is read.
    assert_eq!(
        fields,
        [
            (&b"A"[..], &b"1"[..], 10),
            (b"B", b"2 folded more", 31),
            (b"C", b"", 34)
        ]
    );
    assert_eq!(block.consumed, 34);
    assert_eq!(header_block(b"A: 1\r\n"), None);
    assert_eq!(header_block(b"A: 1\r\nno colon\r\n\r\n"), None);
    assert_eq!(header_block(b"A: 1\rx\r\n\r\n"), None);
    assert_eq!(header_block(b" lead: x\r\n\r\n").unwrap().fields.len(), 1);
}

#[test]
fn mentions_chunked_like_the_stdlib_regexp() {
    use super::header::mentions_chunked;
    for yes in [
        &b"chunked"[..],
        b"Chunked",
        b"gzip, chunked",
        b"CHUNKED;x",
        b" chunked ",
        b"a.chunked",
    ] {
        assert!(mentions_chunked(yes), "{:?}", String::from_utf8_lossy(yes));
    }
    for no in [
        &b""[..],
        b"chunk",
        b"chunked-x",
        b"x-chunked",
        b"chunked_",
        b"_chunked",
        b"chunked1",
        b"gzip",
    ] {
        assert!(!mentions_chunked(no), "{:?}", String::from_utf8_lossy(no));
    }
}
