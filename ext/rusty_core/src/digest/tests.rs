use super::*;
use crate::hex;

fn hexdigest(algorithm: Algorithm, input: &[u8]) -> String {
    String::from_utf8(hex::encode(digest(algorithm, input).as_bytes())).unwrap()
}

// Published test vectors (RFC 1321, FIPS 180-2, the RIPEMD-160 authors' page).
#[test]
fn known_vectors() {
    let cases: &[(Algorithm, &[u8], &str)] = &[
        (Algorithm::Md5, b"", "d41d8cd98f00b204e9800998ecf8427e"),
        (Algorithm::Md5, b"abc", "900150983cd24fb0d6963f7d28e17f72"),
        (Algorithm::Sha1, b"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            Algorithm::Sha256,
            b"abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            Algorithm::Sha384,
            b"abc",
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed\
             8086072ba1e7cc2358baeca134c825a7",
        ),
        (
            Algorithm::Sha512,
            b"abc",
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
             2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
        ),
        (Algorithm::Rmd160, b"abc", "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc"),
    ];
    for &(algorithm, input, expected) in cases {
        assert_eq!(hexdigest(algorithm, input), expected, "{algorithm:?}");
    }
}

#[test]
fn lengths_match_output() {
    for algorithm in Algorithm::ALL {
        assert_eq!(digest(algorithm, b"x").as_bytes().len(), algorithm.digest_length());
    }
}

#[test]
fn split_updates_equal_one_shot() {
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    for algorithm in Algorithm::ALL {
        let whole = digest(algorithm, &data);
        for split in [0, 1, 63, 64, 65, 127, 128, 129, 999, 1000] {
            let mut h = Hasher::new(algorithm);
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(h.peek().as_bytes(), whole.as_bytes(), "{algorithm:?} at {split}");
        }
    }
}

#[test]
fn peek_keeps_state_and_finish_resets() {
    for algorithm in Algorithm::ALL {
        let mut h = Hasher::new(algorithm);
        h.update(b"ab");
        let partial = h.peek();
        assert_eq!(partial.as_bytes(), digest(algorithm, b"ab").as_bytes());
        h.update(b"c");
        assert_eq!(h.finish_reset().as_bytes(), digest(algorithm, b"abc").as_bytes());
        assert_eq!(h.peek().as_bytes(), digest(algorithm, b"").as_bytes());
    }
}
