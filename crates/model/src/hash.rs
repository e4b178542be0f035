//! The one hasher for maps keyed by what the kernel hands out (pids, tids, start times,
//! [`TaskId`](crate::TaskId)s): a multiply-rotate per word instead of SipHash.
//!
//! The per-task maps of top's rates, the live walk's identities, thread-state totals and the
//! exporter's groups hold every task of the host and are looked up once per task per
//! interval; SipHash was a visible part of an interval at 10,000 threads and cost more than
//! the rest of a lookup at 50,000 tasks. Nothing attacker-controlled chooses these keys (the
//! kernel assigns pids, tids and start times), so a hash without a random seed is safe here;
//! names, command lines and other bytes a user chooses keep std's SipHash.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes small integers the kernel hands out, one multiply per word.
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_i32(&mut self, n: i32) {
        // The bits of the pid, not its sign extension: -1 and u32::MAX hash alike.
        self.write_u64(u64::from(n as u32));
    }
}

/// A map keyed by kernel-assigned ids, hashed with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// A set of kernel-assigned ids, hashed with [`IdHasher`].
pub type IdSet<T> = HashSet<T, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskId;

    #[test]
    fn distinct_ids_hash_apart_and_maps_work() {
        let h = |id: TaskId| {
            let mut s = IdHasher::default();
            std::hash::Hash::hash(&id, &mut s);
            s.finish()
        };
        let id = |tgid, tid, start_time_ns| TaskId {
            tgid,
            tid,
            start_time_ns,
        };
        let (a, b, c) = (id(10, 11, 5), id(10, 12, 5), id(10, 11, 6));
        assert_ne!(h(a), h(b));
        assert_ne!(h(a), h(c));
        let mut m: IdMap<TaskId, u32> = IdMap::default();
        m.insert(a, 1);
        m.insert(b, 2);
        assert_eq!(m.get(&a), Some(&1));
        assert_eq!(m.get(&c), None);
    }
}
