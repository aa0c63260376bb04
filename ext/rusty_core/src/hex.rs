//! Lower-case hex encoding, as `Digest.hexencode` writes it.

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the lower-case hex form of `bytes` to `out`.
pub fn encode_into(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX_DIGITS[usize::from(b >> 4)]);
        out.push(HEX_DIGITS[usize::from(b & 0x0f)]);
    }
}

/// Writes the lower-case hex form of `bytes` into `out`, which must be twice as long.
pub fn encode_to_slice(bytes: &[u8], out: &mut [u8]) {
    assert_eq!(out.len(), bytes.len() * 2, "hex output is twice the input");
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX_DIGITS[usize::from(b >> 4)];
        pair[1] = HEX_DIGITS[usize::from(b & 0x0f)];
    }
}

/// The lower-case hex form of `bytes`.
pub fn encode(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    encode_into(bytes, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_every_nibble() {
        assert_eq!(encode(&[]), b"");
        assert_eq!(encode(&[0x00, 0x9f, 0xa0, 0xff]), b"009fa0ff");
        let mut out = [0u8; 4];
        encode_to_slice(&[0x1e, 0xd7], &mut out);
        assert_eq!(&out, b"1ed7");
    }
}
