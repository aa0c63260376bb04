use super::*;

fn long(x: i64) -> Vec<u8> {
    let mut v = Vec::new();
    write_long(&mut v, x);
    v
}

fn text(d: f64) -> String {
    let mut buf = [0u8; 40];
    let n = float_text(d, &mut buf);
    String::from_utf8(buf[..n].to_vec()).unwrap()
}

#[test]
fn long_encoding_matches_mri() {
    assert_eq!(long(0), [0]);
    assert_eq!(long(1), [6]);
    assert_eq!(long(122), [127]);
    assert_eq!(long(123), [1, 123]);
    assert_eq!(long(-1), [0xfa]);
    assert_eq!(long(-123), [0x80]);
    assert_eq!(long(-124), [0xff, 0x84]);
    assert_eq!(long(256), [2, 0, 1]);
    assert_eq!(long(-256), [0xff, 0]);
    assert_eq!(long(-257), [0xfe, 0xff, 0xfe]);
    assert_eq!(long((1 << 30) - 1), [4, 0xff, 0xff, 0xff, 0x3f]);
    assert_eq!(long(-(1 << 30)), [0xfc, 0, 0, 0, 0xc0]);
}

#[test]
fn long_round_trips() {
    let samples = [
        0i64,
        1,
        -1,
        4,
        5,
        -4,
        -5,
        122,
        123,
        -123,
        -124,
        255,
        256,
        -255,
        -256,
        -257,
        65535,
        65536,
        -65536,
        -65537,
        1 << 24,
        -(1 << 24),
        i32::MAX as i64,
        i32::MIN as i64,
    ];
    for x in samples {
        let bytes = long(x);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.read_long(), Some(x), "{x}");
        assert_eq!(r.remaining(), 0);
    }
}

#[test]
fn read_long_truncated() {
    assert_eq!(Reader::new(&[]).read_long(), None);
    assert_eq!(Reader::new(&[2, 1]).read_long(), None);
    assert_eq!(Reader::new(&[0xfe, 1]).read_long(), None);
}

#[test]
fn fixnum_range_is_30_bits() {
    assert!(fixnum_fits_i((1 << 30) - 1));
    assert!(!fixnum_fits_i(1 << 30));
    assert!(fixnum_fits_i(-(1 << 30)));
    assert!(!fixnum_fits_i(-(1 << 30) - 1));
}

#[test]
fn bignum_shorts_are_minimal() {
    assert_eq!(bignum_shorts(1 << 30), ([0, 0, 0, 0x40, 0, 0, 0, 0], 2));
    assert_eq!(bignum_shorts(1 << 32).1, 3);
    assert_eq!(bignum_shorts(u64::MAX).1, 4);
}

#[test]
fn float_text_matches_mri_layout() {
    assert_eq!(text(f64::NAN), "nan");
    assert_eq!(text(f64::INFINITY), "inf");
    assert_eq!(text(f64::NEG_INFINITY), "-inf");
    assert_eq!(text(0.0), "0");
    assert_eq!(text(-0.0), "-0");
    assert_eq!(text(1.5), "1.5");
    assert_eq!(text(100.0), "1e2");
    assert_eq!(text(123456789.0), "123456789");
    assert_eq!(text(1e16), "1e16");
    assert_eq!(text(0.1), "0.1");
    assert_eq!(text(0.0001), "0.0001");
    assert_eq!(text(1.0e-5), "1e-5");
    assert_eq!(text(-1.25e-7), "-1.25e-7");
    assert_eq!(text(1e300), "1e300");
    assert_eq!(text(5e-324), "5e-324");
    assert_eq!(text(f64::MAX), "1.7976931348623157e308");
    assert_eq!(text(12.0), "12");
    assert_eq!(text(0.3), "0.3");
    assert_eq!(text(2.5e-3), "0.0025");
}

#[test]
fn parse_float_reads_what_we_write() {
    let samples = [
        1.5,
        100.0,
        0.1,
        1e-5,
        -1.25e-7,
        1e300,
        5e-324,
        f64::MAX,
        12.0,
        0.0025,
        -0.0,
        0.0,
        std::f64::consts::PI,
        2.2250738585072014e-308,
    ];
    for d in samples {
        let t = text(d);
        let back = parse_float(t.as_bytes()).unwrap();
        assert_eq!(back.to_bits(), d.to_bits(), "{t}");
    }
    assert!(parse_float(b"nan").unwrap().is_nan());
    assert_eq!(parse_float(b"-inf"), Some(f64::NEG_INFINITY));
}

#[test]
fn parse_float_rejects_the_unusual() {
    for bad in [
        &b""[..],
        b"1.",
        b".5",
        b"1e",
        b"0x1p3",
        b" 1",
        b"1\x00ab",
        b"+1",
        b"1e+5",
        b"infinity",
        b"NaN",
        b"123456789012345678",
        b"1e12345",
        b"-",
    ] {
        assert_eq!(parse_float(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn reader_bytes() {
    let mut r = Reader::new(&[8, b'a', b'b', b'c', 7]);
    assert_eq!(r.read_bytes(), Some(&b"abc"[..]));
    assert_eq!(r.read_bytes(), None);
    assert_eq!(Reader::new(&[0xfa]).read_bytes(), None);
}

#[test]
fn float_ties_round_half_even_like_dtoa() {
    // Exactly halfway between two 17-digit candidates; MRI keeps the even digit.
    let cases = [
        (0x428921eacf52ff40u64, "3454183008863.9062"),
        (0xc31aed50192d21f9, "-1894819417507966.2"),
        (0xc2d149d106a11fe8, "-76034948629631.62"),
        (0xc2be31ab024fe890, "-33198671286248.562"),
        (0x430c69c577ef110a, "999699523691041.2"),
    ];
    for (bits, want) in cases {
        assert_eq!(text(f64::from_bits(bits)), want);
    }
}

#[test]
fn splits_class_paths() {
    let parts: Vec<_> = split_class_path(b"A::Bc::D").collect();
    assert_eq!(
        parts,
        vec![Some(&b"A"[..]), Some(&b"Bc"[..]), Some(&b"D"[..])]
    );
    assert_eq!(
        split_class_path(b"Object").collect::<Vec<_>>(),
        vec![Some(&b"Object"[..])]
    );
    for bad in [&b"A:B"[..], b"A::", b"::A", b"", b"A:::B"] {
        assert!(split_class_path(bad).any(|p| p.is_none()), "{:?}", bad);
    }
}

#[test]
fn peek_does_not_consume() {
    let mut r = Reader::new(b"ed");
    assert_eq!(r.peek(), Some(b'e'));
    assert_eq!(r.byte(), Some(b'e'));
    assert_eq!(r.peek(), Some(b'd'));
    assert_eq!(r.byte(), Some(b'd'));
    assert_eq!(r.peek(), None);
}

#[test]
fn strip_18_escapes_drops_a_backslash_before_undefined_escapes() {
    assert_eq!(strip_18_escapes(br"\d\h\k"), br"\dhk".to_vec());
    assert_eq!(strip_18_escapes(br"\\h"), br"\\h".to_vec());
    assert_eq!(strip_18_escapes(br"\\\h"), br"\\h".to_vec());
    assert_eq!(strip_18_escapes(br"a\.b\S"), br"a\.bS".to_vec());
    assert_eq!(strip_18_escapes(b""), b"".to_vec());
}

fn dump_of(body: &[u8]) -> Vec<u8> {
    let mut v = vec![MAJOR, MINOR];
    v.extend_from_slice(body);
    v
}

#[test]
fn flush_points_small_dump_has_none() {
    let mut body = vec![TYPE_STRING];
    write_bytes(&mut body, b"hello");
    assert_eq!(flush_points(&dump_of(&body), 8192), Some(vec![]));
}

#[test]
fn flush_points_after_a_whole_string_content() {
    // The 10_000 content bytes are one piece: the flush comes after all of them.
    let mut body = vec![TYPE_STRING];
    write_bytes(&mut body, &[b'x'; 10_000]);
    let data = dump_of(&body);
    assert_eq!(flush_points(&data, 8192), Some(vec![data.len()]));
}

#[test]
fn flush_points_single_bytes_flush_exactly_at_bufsiz() {
    let mut body = vec![TYPE_ARRAY];
    write_long(&mut body, 20_000);
    body.extend(std::iter::repeat_n(TYPE_NIL, 20_000));
    let data = dump_of(&body);
    assert_eq!(flush_points(&data, 8192), Some(vec![8192, 16384]));
}

#[test]
fn flush_points_a_long_is_one_piece() {
    // 8190 bytes, then a 3-byte long crossing 8192: the flush is after the long.
    let mut body = vec![TYPE_ARRAY];
    write_long(&mut body, 2);
    body.push(TYPE_STRING);
    let content = vec![b'a'; 8190 - 2 - 1 - long(2).len() - 1 - long(8180).len()];
    write_bytes(&mut body, &content);
    assert_eq!(2 + body.len(), 8190);
    body.push(TYPE_FIXNUM);
    body.extend(long(70_000));
    let data = dump_of(&body);
    assert_eq!(
        flush_points(&data, 8192),
        Some(vec![8191 + long(70_000).len()])
    );
}

#[test]
fn flush_points_walk_nested_records() {
    // I"..." with an encoding ivar, an object with an ivar, a bignum, a user class, a
    // _dump record, a hash with default, a regexp, links and symlinks.
    let mut body = vec![TYPE_ARRAY];
    write_long(&mut body, 7);
    body.extend_from_slice(b"I\"");
    write_bytes(&mut body, b"caf\xc3\xa9");
    body.extend(long(1));
    body.push(TYPE_SYMBOL);
    write_bytes(&mut body, b"E");
    body.push(TYPE_TRUE);
    body.push(TYPE_OBJECT);
    body.push(TYPE_SYMBOL);
    write_bytes(&mut body, b"Point");
    body.extend(long(1));
    body.push(TYPE_SYMBOL);
    write_bytes(&mut body, b"@x");
    body.push(TYPE_SYMLINK);
    body.extend(long(0));
    body.extend_from_slice(b"l+");
    body.extend(long(5));
    body.extend_from_slice(&[1; 10]);
    body.extend_from_slice(b"C:");
    write_bytes(&mut body, b"MyArray");
    body.push(TYPE_ARRAY);
    body.extend(long(0));
    body.extend_from_slice(b"u;");
    body.extend(long(1));
    write_bytes(&mut body, b"dumped");
    body.push(TYPE_HASH_DEF);
    body.extend(long(1));
    body.push(TYPE_LINK);
    body.extend(long(1));
    body.push(TYPE_NIL);
    body.push(TYPE_FALSE);
    body.push(TYPE_REGEXP);
    write_bytes(&mut body, b"a+");
    body.push(1);
    let data = dump_of(&body);
    assert_eq!(flush_points(&data, 8192), Some(vec![]));
    // With a tiny buffer every piece is flushed: the first piece ends at 1.
    let points = flush_points(&data, 1).unwrap();
    assert_eq!(points.first(), Some(&1));
    assert_eq!(points.last(), Some(&data.len()));
    // Truncated or trailing data is not one dump.
    assert_eq!(flush_points(&data[..data.len() - 1], 8192), None);
    let mut longer = data.clone();
    longer.push(TYPE_NIL);
    assert_eq!(flush_points(&longer, 8192), None);
    assert_eq!(flush_points(&dump_of(b"?"), 8192), None);
}

/// A port over bytes that records MRI-style calls.
struct MockPort<'a> {
    data: &'a [u8],
    pos: usize,
    calls: Vec<(&'static str, usize)>,
    /// Answer every `read(n)` of n > 1 with one byte fewer.
    short_reads: bool,
}

impl port_reader::Port for MockPort<'_> {
    type Error = ();
    fn getbyte(&mut self) -> Result<Option<u8>, ()> {
        self.calls.push(("getbyte", 0));
        let b = self.data.get(self.pos).copied();
        self.pos += usize::from(b.is_some());
        Ok(b)
    }
    fn read(&mut self, n: usize) -> Result<Option<Vec<u8>>, ()> {
        self.calls.push(("read", n));
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let n = if self.short_reads && n > 1 { n - 1 } else { n };
        let end = (self.pos + n).min(self.data.len());
        let bytes = self.data[self.pos..end].to_vec();
        self.pos = end;
        Ok(Some(bytes))
    }
    fn symbol_name_read(&mut self) -> Result<(), ()> {
        Ok(())
    }
    fn clear_last_read(&mut self) -> Result<(), ()> {
        Ok(())
    }
    fn direct_string(&mut self, _offset: usize) -> Result<bool, ()> {
        Ok(false)
    }
}

type Calls = Vec<(&'static str, usize)>;

const RUBY_3_1: port_reader::Rules = port_reader::Rules {
    bignums: port_reader::BignumReads::Bytes,
    short_refill_fails: false,
    bignum_sign_checked: false,
};

fn read_with_calls(data: &[u8]) -> (Option<Vec<u8>>, Calls, usize) {
    read_with_rules(data, RUBY_3_1, false)
}

fn read_with_rules(
    data: &[u8],
    rules: port_reader::Rules,
    short_reads: bool,
) -> (Option<Vec<u8>>, Calls, usize) {
    let mut port = MockPort {
        data,
        pos: 0,
        calls: Vec::new(),
        short_reads,
    };
    let got = port_reader::read_object(&mut port, rules).unwrap();
    (got, port.calls, port.pos)
}

#[test]
fn port_reader_short_refills_stop_only_where_ruby_says_too_short() {
    // [1, 2, 3]: the first refill asks for 2 bytes and gets 1.
    let data = dump_of(&[
        TYPE_ARRAY,
        8,
        TYPE_FIXNUM,
        6,
        TYPE_FIXNUM,
        7,
        TYPE_FIXNUM,
        8,
    ]);
    let (got, calls, _) = read_with_rules(&data, RUBY_3_1, true);
    assert_eq!(got.as_deref(), Some(&data[..]));
    assert!(calls.len() > 5);
    let ruby_3_4_11 = port_reader::Rules {
        bignums: port_reader::BignumReads::SmallByByte,
        short_refill_fails: true,
        bignum_sign_checked: true,
    };
    let (got, calls, _) = read_with_rules(&data, ruby_3_4_11, true);
    assert_eq!(got, None);
    assert_eq!(calls.last(), Some(&("read", 2)));
    assert_eq!(calls.len(), 5);
    // Full answers read the same under both rules.
    assert_eq!(
        read_with_rules(&data, ruby_3_4_11, false),
        read_with_calls(&data)
    );
}

#[test]
fn port_reader_reads_ahead_only_inside_an_array() {
    // [1, 2, 3] then a trailer: MRI's calls (as Ruby 3.1 and 3.3 make them).
    let mut data = dump_of(&[
        TYPE_ARRAY,
        8,
        TYPE_FIXNUM,
        6,
        TYPE_FIXNUM,
        7,
        TYPE_FIXNUM,
        8,
    ]);
    let object_len = data.len();
    data.extend_from_slice(b"TRAILER");
    let (got, calls, pos) = read_with_calls(&data);
    assert_eq!(got.as_deref(), Some(&data[..object_len]));
    assert_eq!(pos, object_len);
    let expected = [
        ("getbyte", 0),
        ("getbyte", 0),
        ("getbyte", 0),
        ("getbyte", 0),
        ("read", 2),
        ("read", 1),
        ("read", 1),
        ("getbyte", 0),
        ("getbyte", 0),
    ];
    assert_eq!(calls, expected);
}

#[test]
fn port_reader_symbols_read_whole_strings_stop_if_the_port_string_cannot_be_used() {
    let mut body = vec![TYPE_SYMBOL];
    write_bytes(&mut body, b"abc");
    let data = dump_of(&body);
    let (got, calls, _) = read_with_calls(&data);
    assert_eq!(got.as_deref(), Some(&data[..]));
    assert_eq!(calls.last(), Some(&("read", 3)));
    // A top-level String is read into the port's own String, which this port refuses
    // to hand on: stop after that read.
    let mut body = vec![TYPE_STRING];
    write_bytes(&mut body, b"abc");
    let (got, calls, _) = read_with_calls(&dump_of(&body));
    assert_eq!((got, calls.len()), (None, 5));
}

#[test]
fn port_reader_stops_before_class_records_and_on_short_data() {
    let data = dump_of(&[
        TYPE_ARRAY,
        7,
        TYPE_NIL,
        TYPE_OBJECT,
        TYPE_SYMBOL,
        6,
        b'A',
        TYPE_NIL,
    ]);
    let (got, _, _) = read_with_calls(&data);
    assert_eq!(got, None);
    let mut body = vec![TYPE_STRING];
    write_bytes(&mut body, b"abcdef");
    let data = dump_of(&body);
    let (got, _, _) = read_with_calls(&data[..data.len() - 2]);
    assert_eq!(got, None);
    let (got, calls, _) = read_with_calls(&[MAJOR]);
    assert_eq!((got, calls.len()), (None, 2));
}
