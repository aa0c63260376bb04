//! Message digests with the algorithms and sizes of Ruby's `Digest` classes.
//!
//! [`Hasher`] is one running digest of any [`Algorithm`]. It is a plain value (a few
//! hundred bytes at most) so that the binding can copy it out of a Ruby object, hash a
//! large string without the GVL, and store it back.

use ripemd::Ripemd160;
use sha1::Sha1;
use sha2::digest::Digest as _;
use sha2::{Sha256, Sha384, Sha512};

mod md5;
use md5::Md5;

/// The largest digest any algorithm here produces (SHA-512), in bytes.
pub const MAX_DIGEST_LENGTH: usize = 64;

/// The algorithms behind `Digest::MD5`, `SHA1`, `SHA256`, `SHA384`, `SHA512` and `RMD160`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
    Rmd160,
}

impl Algorithm {
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Md5,
        Algorithm::Sha1,
        Algorithm::Sha256,
        Algorithm::Sha384,
        Algorithm::Sha512,
        Algorithm::Rmd160,
    ];

    /// Length of the finished digest in bytes (`Digest::Base#digest_length`).
    pub fn digest_length(self) -> usize {
        match self {
            Algorithm::Md5 => 16,
            Algorithm::Sha1 | Algorithm::Rmd160 => 20,
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
        }
    }

    /// Length of one compression block in bytes (`Digest::Base#block_length`).
    pub fn block_length(self) -> usize {
        match self {
            Algorithm::Sha384 | Algorithm::Sha512 => 128,
            _ => 64,
        }
    }

    /// The stdlib's constant name under `Digest`.
    pub fn ruby_name(self) -> &'static str {
        match self {
            Algorithm::Md5 => "MD5",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
            Algorithm::Sha384 => "SHA384",
            Algorithm::Sha512 => "SHA512",
            Algorithm::Rmd160 => "RMD160",
        }
    }
}

/// A running digest: the state after the bytes fed so far.
#[derive(Clone)]
pub enum Hasher {
    Md5(Md5),
    Sha1(Sha1),
    Sha256(Sha256),
    Sha384(Sha384),
    Sha512(Sha512),
    Rmd160(Ripemd160),
}

impl Hasher {
    /// A fresh digest of `algorithm`, as after `reset`.
    pub fn new(algorithm: Algorithm) -> Hasher {
        match algorithm {
            Algorithm::Md5 => Hasher::Md5(Md5::default()),
            Algorithm::Sha1 => Hasher::Sha1(Sha1::new()),
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            Algorithm::Sha384 => Hasher::Sha384(Sha384::new()),
            Algorithm::Sha512 => Hasher::Sha512(Sha512::new()),
            Algorithm::Rmd160 => Hasher::Rmd160(Ripemd160::new()),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            Hasher::Md5(_) => Algorithm::Md5,
            Hasher::Sha1(_) => Algorithm::Sha1,
            Hasher::Sha256(_) => Algorithm::Sha256,
            Hasher::Sha384(_) => Algorithm::Sha384,
            Hasher::Sha512(_) => Algorithm::Sha512,
            Hasher::Rmd160(_) => Algorithm::Rmd160,
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(bytes),
            Hasher::Sha1(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha384(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
            Hasher::Rmd160(h) => h.update(bytes),
        }
    }

    pub fn reset(&mut self) {
        *self = Hasher::new(self.algorithm());
    }

    /// The digest of the bytes so far; the state is left untouched, as `Digest::Instance#digest`
    /// (which finishes a clone) leaves it.
    pub fn peek(&self) -> Digest {
        let mut out = Digest::default();
        match self.clone() {
            Hasher::Md5(h) => out.set(&h.finalize()),
            Hasher::Sha1(h) => out.set(&h.finalize()),
            Hasher::Sha256(h) => out.set(&h.finalize()),
            Hasher::Sha384(h) => out.set(&h.finalize()),
            Hasher::Sha512(h) => out.set(&h.finalize()),
            Hasher::Rmd160(h) => out.set(&h.finalize()),
        }
        out
    }

    /// The digest of the bytes so far, then back to the initial state (`digest!`).
    pub fn finish_reset(&mut self) -> Digest {
        let digest = self.peek();
        self.reset();
        digest
    }
}

/// One-shot digest of `bytes`.
pub fn digest(algorithm: Algorithm, bytes: &[u8]) -> Digest {
    let mut hasher = Hasher::new(algorithm);
    hasher.update(bytes);
    hasher.finish_reset()
}

/// A finished digest, kept inline so that producing one allocates nothing.
#[derive(Clone, Copy)]
pub struct Digest {
    bytes: [u8; MAX_DIGEST_LENGTH],
    len: usize,
}

impl Default for Digest {
    fn default() -> Self {
        Digest {
            bytes: [0; MAX_DIGEST_LENGTH],
            len: 0,
        }
    }
}

impl Digest {
    fn set(&mut self, bytes: &[u8]) {
        self.bytes[..bytes.len()].copy_from_slice(bytes);
        self.len = bytes.len();
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests;
