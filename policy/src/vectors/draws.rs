//! Scripted randomness: the draws a vector names, as the `u32`s this crate's RNG calls consume.

use crate::RngCore;

/// An RNG that hands out a script of `u32`s: the values for which this crate's uniform index
/// draw (`random_range(0..n)` in rand 0.9) gives the scripted indices. Asking for more than the
/// script holds is recorded (and answered with 0), so a replay can report it instead of
/// panicking.
#[derive(Debug, Default)]
pub struct Draws {
    values: Vec<u32>,
    next: usize,
    overrun: bool,
}

impl Draws {
    /// A script drawing `indices`, each out of `n` (`n` at most 2^16).
    pub fn indices(n: usize, indices: &[usize]) -> Draws {
        let values = indices
            .iter()
            .map(|&i| {
                assert!(i < n && n <= 1 << 16, "draw {i} of {n}");
                // The smallest x with floor(x × n / 2^32) = i; its low half stays below n, so
                // rand never takes a second draw for it.
                ((i as u64) << 32).div_ceil(n as u64) as u32
            })
            .collect();
        Draws {
            values,
            next: 0,
            overrun: false,
        }
    }

    /// Whether every scripted draw was used and no more were asked for.
    pub fn used_exactly(&self) -> bool {
        self.next == self.values.len() && !self.overrun
    }
}

impl RngCore for Draws {
    fn next_u32(&mut self) -> u32 {
        match self.values.get(self.next) {
            Some(&v) => {
                self.next += 1;
                v
            }
            None => {
                self.overrun = true;
                0
            }
        }
    }

    fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(4) {
            let v = self.next_u32().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}
