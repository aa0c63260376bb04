//! Header field names, as `Net::HTTPHeader#capitalize` writes them.

/// The length of `capitalize(name)`: `name` without its trailing `-`s (0 when no part
/// is left).
pub fn capitalized_len(name: &[u8]) -> usize {
    name.iter().rposition(|&b| b != b'-').map_or(0, |i| i + 1)
}

/// Writes `capitalize(name)` into `out`, which is `capitalized_len(name)` bytes long
/// (so that a caller can write straight into a new string's buffer).
pub fn capitalize_into(name: &[u8], out: &mut [u8]) {
    // A part starts after a `-` (or at the start); `-` itself has no case. One table
    // load per byte: this runs for every field of every request and response.
    let mut case = &CASES.upper;
    for (dest, &b) in out.iter_mut().zip(name) {
        *dest = case[b as usize];
        case = if b == b'-' {
            &CASES.upper
        } else {
            &CASES.lower
        };
    }
}

/// Every byte upper-cased and lower-cased (ASCII letters only; other bytes as they are).
struct Cases {
    upper: [u8; 256],
    lower: [u8; 256],
}

static CASES: Cases = {
    let mut cases = Cases {
        upper: [0; 256],
        lower: [0; 256],
    };
    let mut b = 0;
    while b < 256 {
        cases.upper[b] = (b as u8).to_ascii_uppercase();
        cases.lower[b] = (b as u8).to_ascii_lowercase();
        b += 1;
    }
    cases
};

/// `name.split(/-/).map(&:capitalize).join('-')` for an ASCII `name`: each `-`-separated
/// part with its first byte upper-cased and the rest lower-cased. Like `split`, trailing
/// empty parts are dropped; `None` when no part is left (Ruby then returns an empty
/// US-ASCII string from `[].join`). Non-ASCII bytes are copied unchanged, but only ASCII
/// input matches Ruby's Unicode-aware `String#capitalize`.
pub fn capitalize(name: &[u8]) -> Option<Vec<u8>> {
    let len = capitalized_len(name);
    if len == 0 {
        return None;
    }
    let mut out = vec![0; len];
    capitalize_into(name, &mut out);
    Some(out)
}

/// Appends one request header line, `"#{capitalize(name)}: #{values.join(', ')}\r\n"`,
/// as `Net::HTTPGenericRequest#write_header` writes it.
pub fn push_field_line<'a>(
    out: &mut Vec<u8>,
    name: &[u8],
    values: impl IntoIterator<Item = &'a [u8]>,
) {
    if let Some(name) = capitalize(name) {
        out.extend_from_slice(&name);
    }
    out.extend_from_slice(b": ");
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(value);
    }
    out.extend_from_slice(b"\r\n");
}

/// The request line `"#{method} #{path} HTTP/#{version}\r\n"`, or `None` when it would
/// hold a CR or LF (the stdlib raises then).
pub fn request_line(method: &[u8], path: &[u8], version: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(method.len() + path.len() + version.len() + 13);
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(path);
    out.extend_from_slice(b" HTTP/");
    out.extend_from_slice(version);
    if out.iter().any(|&b| b == b'\r' || b == b'\n') {
        return None;
    }
    out.extend_from_slice(b"\r\n");
    Some(out)
}

/// `/(?:\A|[^\-\w])chunked(?![\-\w])/i =~ field` (Net::HTTPHeader#chunked?) for an ASCII
/// `field`: "chunked" in any case, not inside a longer token of word characters and
/// `-`.
pub fn mentions_chunked(field: &[u8]) -> bool {
    let is_token = |b: u8| b == b'-' || b == b'_' || b.is_ascii_alphanumeric();
    field.windows(7).enumerate().any(|(at, word)| {
        word.eq_ignore_ascii_case(b"chunked")
            && (at == 0 || !is_token(field[at - 1]))
            && field.get(at + 7).is_none_or(|&b| !is_token(b))
    })
}
