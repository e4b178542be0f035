//! xorshift64*: the generators' own randomness (seeded by proptest in roundtrip.rs, by a
//! constant in the codec_bench example, which includes this file), reproducible from its
//! seed and dependency-free.
#![allow(dead_code)] // The example draws only bits and ranges.

/// The generator's state.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `pct` times in 100.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// A number, sometimes an extreme one.
    pub fn num(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => u64::MAX,
            2 => self.next(),
            _ => self.below(1 << 30),
        }
    }

    /// An `i32`, sometimes an extreme one (`MIN`, `MAX`, -1).
    pub fn i32(&mut self) -> i32 {
        match self.below(6) {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => -1,
            _ => self.below(1 << 20) as i32,
        }
    }

    /// A `u32`: the low bits of [`Rng::num`].
    pub fn u32(&mut self) -> u32 {
        self.num() as u32
    }

    /// Up to `max` random bytes.
    pub fn bytes(&mut self, max: u64) -> Vec<u8> {
        (0..self.below(max + 1))
            .map(|_| self.next() as u8)
            .collect()
    }

    /// Up to `max` characters from a hostile pool (NUL, newline, quotes, multibyte).
    pub fn text(&mut self, max: u64) -> String {
        let pool = ['a', 'Z', ' ', '\n', '\0', 'é', '→', '😀', '\\', '"'];
        (0..self.below(max + 1))
            .map(|_| pool[self.below(pool.len() as u64) as usize])
            .collect()
    }

    /// `Some(f(self))` 80 times in 100, else `None`.
    pub fn opt<T>(&mut self, f: impl FnOnce(&mut Rng) -> T) -> Option<T> {
        if self.chance(80) {
            Some(f(self))
        } else {
            None
        }
    }
}
