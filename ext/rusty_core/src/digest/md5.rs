//! MD5 with the round steps ordered for a short dependency chain.
//!
//! The md-5 crate's portable code was ~30% slower than the C in Ruby's digest/md5 on
//! 1 MiB inputs (measured on this project's machine, alternating in one process); MD5
//! has no SIMD or hardware path, so speed comes from the order of operations alone:
//! each step adds the message word and constant to the *old* value off the critical
//! path, and computes F as `z ^ (x & (y ^ z))`, leaving two operations after `x` is known.

const S: [[u32; 4]; 4] = [
    [7, 12, 17, 22],
    [5, 9, 14, 20],
    [4, 11, 16, 23],
    [6, 10, 15, 21],
];

// K[i] = floor(abs(sin(i + 1)) * 2^32), RFC 1321.
const K: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

const INITIAL: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

#[derive(Clone)]
pub struct Md5 {
    state: [u32; 4],
    buffer: [u8; 64],
    buffered: usize,
    length: u64,
}

impl Default for Md5 {
    fn default() -> Self {
        Md5 {
            state: INITIAL,
            buffer: [0; 64],
            buffered: 0,
            length: 0,
        }
    }
}

impl Md5 {
    pub fn update(&mut self, mut data: &[u8]) {
        self.length = self.length.wrapping_add(data.len() as u64);
        if self.buffered > 0 {
            let take = (64 - self.buffered).min(data.len());
            self.buffer[self.buffered..self.buffered + take].copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
            if self.buffered < 64 {
                return;
            }
            let block = self.buffer;
            compress(&mut self.state, &block);
            self.buffered = 0;
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            compress(&mut self.state, block.try_into().expect("64-byte block"));
        }
        let rest = blocks.remainder();
        self.buffer[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    pub fn finalize(mut self) -> [u8; 16] {
        let bit_length = self.length.wrapping_mul(8);
        let mut padding = [0u8; 72];
        padding[0] = 0x80;
        let pad_len = if self.buffered < 56 {
            56 - self.buffered
        } else {
            120 - self.buffered
        };
        padding[pad_len..pad_len + 8].copy_from_slice(&bit_length.to_le_bytes());
        let length = self.length;
        self.update(&padding[..pad_len + 8]);
        self.length = length;
        debug_assert_eq!(self.buffered, 0);
        let mut out = [0u8; 16];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        out
    }
}

fn compress(state: &mut [u32; 4], block: &[u8; 64]) {
    // Message words are read from the block where they are used (x86 loads unaligned
    // words for free), rather than copied to an array first as portable code does.
    let m = |index: usize| {
        u32::from_le_bytes([
            block[4 * index],
            block[4 * index + 1],
            block[4 * index + 2],
            block[4 * index + 3],
        ])
    };
    let [mut a, mut b, mut c, mut d] = *state;

    // One step: `a = b + rotl(a + (m + k) + f(b, c, d), s)`, with `a + m + k` first since it
    // does not wait for `b`. Fully unrolled so rotations and indices are constants.
    macro_rules! step {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $j:expr, $round:expr, $index:expr) => {
            $a = opaque($a.wrapping_add(m($index)).wrapping_add(K[$j]))
                .wrapping_add($f($b, $c, $d))
                .rotate_left(S[$round][$j % 4])
                .wrapping_add($b);
        };
    }
    macro_rules! four {
        ($f:ident, $j:expr, $round:expr, $index:expr) => {
            step!($f, a, b, c, d, $j, $round, $index($j));
            step!($f, d, a, b, c, $j + 1, $round, $index($j + 1));
            step!($f, c, d, a, b, $j + 2, $round, $index($j + 2));
            step!($f, b, c, d, a, $j + 3, $round, $index($j + 3));
        };
    }
    macro_rules! round {
        ($f:ident, $round:expr, $index:expr) => {
            four!($f, 16 * $round, $round, $index);
            four!($f, 16 * $round + 4, $round, $index);
            four!($f, 16 * $round + 8, $round, $index);
            four!($f, 16 * $round + 12, $round, $index);
        };
    }
    round!(f, 0, index_f);
    round!(g, 1, index_g);
    round!(h, 2, index_h);
    round!(i, 3, index_i);

    state[0] = state[0].wrapping_add(a);
    state[1] = state[1].wrapping_add(b);
    state[2] = state[2].wrapping_add(c);
    state[3] = state[3].wrapping_add(d);
}

/// Returns `x` unchanged, but hides how it was computed from the optimiser. LLVM moves
/// constant additions to the end of an add chain, which puts `+ K[j]` after `f(b, c, d)`,
/// one add too many on the critical path (~6% slower than gcc's C here); this keeps
/// `a + m + K` computed before `b` is known.
#[inline(always)]
fn opaque(x: u32) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x = x;
        // SAFETY: an empty instruction sequence that only claims to read and write `x`.
        unsafe { core::arch::asm!("/* {0:e} */", inout(reg) x, options(pure, nomem, nostack)) };
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        x
    }
}

#[inline(always)]
fn f(x: u32, y: u32, z: u32) -> u32 {
    z ^ (x & (y ^ z))
}
#[inline(always)]
fn g(x: u32, y: u32, z: u32) -> u32 {
    // The masked bits never overlap, so + is |, and it lets the two halves add separately.
    (x & z).wrapping_add(y & !z)
}
#[inline(always)]
fn h(x: u32, y: u32, z: u32) -> u32 {
    x ^ (y ^ z)
}
#[inline(always)]
fn i(x: u32, y: u32, z: u32) -> u32 {
    y ^ (x | !z)
}
const fn index_f(j: usize) -> usize {
    j % 16
}
const fn index_g(j: usize) -> usize {
    (5 * j + 1) % 16
}
const fn index_h(j: usize) -> usize {
    (3 * j + 5) % 16
}
const fn index_i(j: usize) -> usize {
    (7 * j) % 16
}
