//! Header field names, as `Net::HTTPHeader#capitalize` writes them.

/// `name.split(/-/).map(&:capitalize).join('-')` for an ASCII `name`: each `-`-separated
/// part with its first byte upper-cased and the rest lower-cased. Like `split`, trailing
/// empty parts are dropped; `None` when no part is left (Ruby then returns an empty
/// US-ASCII string from `[].join`). Non-ASCII bytes are copied unchanged, but only ASCII
/// input matches Ruby's Unicode-aware `String#capitalize`.
pub fn capitalize(name: &[u8]) -> Option<Vec<u8>> {
    let end = name.iter().rposition(|&b| b != b'-')? + 1;
    let mut out = Vec::with_capacity(end);
    let mut at_start = true;
    for &b in &name[..end] {
        if b == b'-' {
            out.push(b'-');
            at_start = true;
        } else {
            out.push(if at_start {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            });
            at_start = false;
        }
    }
    Some(out)
}
