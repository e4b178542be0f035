//! The attribute groups: what a query can ask for of each task. [`Group`] names one (each
//! field of [`crate::fields::FIELDS`] belongs to one), [`Groups`] is a set of them, the one
//! type a query, a collector and a front end pass around.
//!
//! A group is what one read gives: one /proc file (or a part of one that is cheaper to get
//! alone), or the fields the BPF iterator fills together. A collector reads only what the
//! set needs.

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// One attribute group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Group {
    /// The task's identity, always there: in every set, never a flag.
    Identity,
    /// State, parents, tty, comm, nice, policy, threads (`/proc/PID/stat`).
    Base,
    /// Effective ids only (cheap: the owner of /proc/PID).
    CredEffective,
    /// All ids and supplementary groups (`/proc/PID/status`).
    CredFull,
    /// CPU times, faults, start time (`/proc/PID/stat`).
    Stat,
    /// Memory (`/proc/PID/statm`).
    Mem,
    /// Swap and locked memory, and exact RSS and size (`/proc/PID/status`).
    MemStatus,
    /// Locked memory (`Stat::locked_bytes`): free for the BPF backend, `status` for procfs.
    Locked,
    /// Command line (`/proc/PID/cmdline`; takes the target's mmap lock).
    Cmdline,
    /// Executable path (`/proc/PID/exe`).
    Exe,
    /// I/O counters (`/proc/PID/io`).
    Io,
    /// Scheduler accounting (`/proc/PID/schedstat`).
    Sched,
    /// Context switch counts (`/proc/PID/status`).
    SchedSwitches,
    /// Wait channel (`/proc/PID/wchan`).
    Wchan,
    /// Control-group membership (`/proc/PID/cgroup`).
    Cgroup,
    /// Signal masks (`/proc/PID/status`).
    Signals,
    /// Code and stack addresses, RSS limit (`/proc/PID/stat`).
    Layout,
    /// Count of open file descriptors (the size the kernel reports for `/proc/PID/fd`).
    Fds,
    /// Environment (`/proc/PID/environ`; takes the target's mmap lock, needs ptrace read
    /// access).
    Environ,
    /// Namespace inode numbers (`/proc/PID/ns/*`).
    Ns,
    /// OOM killer score (`/proc/PID/oom_score`).
    OomScore,
    /// OOM score adjustment (`/proc/PID/oom_score_adj`).
    OomScoreAdj,
    /// Autogroup id and nice (`/proc/PID/autogroup`).
    Autogroup,
    /// Audit login uid (`/proc/PID/loginuid`).
    Loginuid,
    /// PSS and USS (`/proc/PID/smaps_rollup`; takes the target's mmap lock).
    Smaps,
    /// Security label (`/proc/TGID/attr/current`).
    Label,
    /// What sd-login says (unit, slice, session, seat...: `Extra::login`), derived from
    /// `/proc/PID/cgroup` (read for it even when `Cgroup` is not asked for) and systemd's
    /// runtime files.
    Login,
}

impl Group {
    /// Every group but the identity, in declaration order.
    pub const FLAGS: [Group; 26] = [
        Group::Base,
        Group::CredEffective,
        Group::CredFull,
        Group::Stat,
        Group::Mem,
        Group::MemStatus,
        Group::Locked,
        Group::Cmdline,
        Group::Exe,
        Group::Io,
        Group::Sched,
        Group::SchedSwitches,
        Group::Wchan,
        Group::Cgroup,
        Group::Signals,
        Group::Layout,
        Group::Fds,
        Group::Environ,
        Group::Ns,
        Group::OomScore,
        Group::OomScoreAdj,
        Group::Autogroup,
        Group::Loginuid,
        Group::Smaps,
        Group::Label,
        Group::Login,
    ];

    /// Its bit in a [`Groups`] (none for the identity).
    const fn bit(self) -> u32 {
        match self {
            Group::Identity => 0,
            g => 1 << (g as u8),
        }
    }

    /// Asks for this group in `g`.
    pub fn ask(self, g: &mut Groups) {
        g.insert(self);
    }

    /// Whether `g` asks for this group (the identity always).
    pub fn asked(self, g: Groups) -> bool {
        g.has(self)
    }
}

/// A set of attribute groups: which to collect. A collector reads only what these need.
///
/// Built with [`Groups::of`] (`Groups::of(&[Group::Base, Group::Stat])`), [`Groups::all`] or
/// `Groups::default()` (none), then [`Groups::with`], [`Groups::insert`], `|`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Groups {
    bits: u32,
    /// With `Mem`: only RSS and size are wanted, so `status` (when read anyway) is enough and
    /// `statm` is skipped. A refinement of `Mem`, not a group.
    pub mem_rss_only: bool,
}

impl Groups {
    /// The groups in `list`.
    pub const fn of(list: &[Group]) -> Groups {
        let mut bits = 0;
        let mut i = 0;
        while i < list.len() {
            bits |= list[i].bit();
            i += 1;
        }
        Groups {
            bits,
            mem_rss_only: false,
        }
    }

    /// Every group.
    pub const fn all() -> Groups {
        Groups::of(&Group::FLAGS)
    }

    /// Whether `group` is in the set (the identity always is).
    pub const fn has(&self, group: Group) -> bool {
        matches!(group, Group::Identity) || self.bits & group.bit() != 0
    }

    /// Whether any group of `other` is in the set.
    pub const fn intersects(&self, other: Groups) -> bool {
        self.bits & other.bits != 0
    }

    /// Adds `group`.
    pub fn insert(&mut self, group: Group) {
        self.bits |= group.bit();
    }

    /// Takes `group` out.
    pub fn remove(&mut self, group: Group) {
        self.bits &= !group.bit();
    }

    /// Adds or takes out `group`.
    pub fn set(&mut self, group: Group, on: bool) {
        if on {
            self.insert(group);
        } else {
            self.remove(group);
        }
    }

    /// This set with `group` added.
    #[must_use]
    pub const fn with(mut self, group: Group) -> Groups {
        self.bits |= group.bit();
        self
    }

    /// This set with `group` in it when `on`, out of it when not.
    #[must_use]
    pub const fn flag(self, group: Group, on: bool) -> Groups {
        if on {
            self.with(group)
        } else {
            self.without(group)
        }
    }

    /// This set with [`Groups::mem_rss_only`] set to `on`.
    #[must_use]
    pub const fn rss_only(mut self, on: bool) -> Groups {
        self.mem_rss_only = on;
        self
    }

    /// This set without `group`.
    #[must_use]
    pub const fn without(mut self, group: Group) -> Groups {
        self.bits &= !group.bit();
        self
    }

    /// The groups of this set that are also in `keep` ([`Groups::mem_rss_only`] kept).
    #[must_use]
    pub const fn only(mut self, keep: Groups) -> Groups {
        self.bits &= keep.bits;
        self
    }

    /// Whether no group is asked for.
    pub const fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The groups asked for, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Group> {
        Group::FLAGS.into_iter().filter(move |g| self.has(*g))
    }

    /// True when /proc/PID/stat must be read.
    pub const fn needs_stat_file(&self) -> bool {
        self.intersects(const { Groups::of(&[Group::Base, Group::Stat, Group::Layout]) })
    }

    /// True when /proc/PID/cgroup must be read (for `Cgroup` or for `Login`).
    pub const fn needs_cgroup_file(&self) -> bool {
        self.has(Group::Cgroup) || self.has(Group::Login)
    }

    /// True when /proc/PID/status must be read.
    pub const fn needs_status_file(&self) -> bool {
        self.intersects(
            const {
                Groups::of(&[
                    Group::CredFull,
                    Group::MemStatus,
                    Group::SchedSwitches,
                    Group::Locked,
                    Group::Signals,
                ])
            },
        )
    }
}

impl std::ops::BitOr for Groups {
    type Output = Groups;
    fn bitor(self, other: Groups) -> Groups {
        Groups {
            bits: self.bits | other.bits,
            mem_rss_only: self.mem_rss_only || other.mem_rss_only,
        }
    }
}

impl std::ops::BitOrAssign for Groups {
    fn bitor_assign(&mut self, other: Groups) {
        *self = *self | other;
    }
}

impl FromIterator<Group> for Groups {
    fn from_iter<I: IntoIterator<Item = Group>>(groups: I) -> Groups {
        let mut g = Groups::default();
        groups.into_iter().for_each(|x| g.insert(x));
        g
    }
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut set = f.debug_set();
        set.entries(self.iter());
        if self.mem_rss_only {
            set.entry(&"mem_rss_only");
        }
        set.finish()
    }
}

/// One entry of the query socket's encoding of a set: a flag, in the order of the wire.
#[derive(Clone, Copy)]
enum WireFlag {
    Group(Group, &'static str),
    MemRssOnly,
}

/// The set as the query socket carries it: a struct of 27 named flags in this order (postcard
/// writes one byte each), so the wire does not depend on the order [`Group`] declares.
const WIRE: [WireFlag; 27] = {
    use Group as G;
    use WireFlag::Group as F;
    [
        F(G::Base, "base"),
        F(G::CredEffective, "cred_effective"),
        F(G::CredFull, "cred_full"),
        F(G::Stat, "stat"),
        F(G::Mem, "mem"),
        F(G::MemStatus, "mem_status"),
        F(G::Locked, "locked"),
        WireFlag::MemRssOnly,
        F(G::Cmdline, "cmdline"),
        F(G::Exe, "exe"),
        F(G::Io, "io"),
        F(G::Sched, "sched"),
        F(G::SchedSwitches, "sched_switches"),
        F(G::Wchan, "wchan"),
        F(G::Cgroup, "cgroup"),
        F(G::Signals, "signals"),
        F(G::Layout, "layout"),
        F(G::Fds, "fds"),
        F(G::Environ, "environ"),
        F(G::Ns, "ns"),
        F(G::OomScore, "oom_score"),
        F(G::OomScoreAdj, "oom_score_adj"),
        F(G::Autogroup, "autogroup"),
        F(G::Loginuid, "loginuid"),
        F(G::Smaps, "smaps"),
        F(G::Label, "label"),
        F(G::Login, "login"),
    ]
};

const WIRE_NAMES: [&str; 27] = {
    let mut names = [""; 27];
    let mut i = 0;
    while i < 27 {
        names[i] = match WIRE[i] {
            WireFlag::Group(_, name) => name,
            WireFlag::MemRssOnly => "mem_rss_only",
        };
        i += 1;
    }
    names
};

impl Groups {
    fn wire_flag(&self, flag: WireFlag) -> bool {
        match flag {
            WireFlag::Group(g, _) => self.has(g),
            WireFlag::MemRssOnly => self.mem_rss_only,
        }
    }

    fn set_wire_flag(&mut self, flag: WireFlag, on: bool) {
        match flag {
            WireFlag::Group(g, _) => self.set(g, on),
            WireFlag::MemRssOnly => self.mem_rss_only = on,
        }
    }
}

impl Serialize for Groups {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Groups", WIRE.len())?;
        for (flag, name) in WIRE.into_iter().zip(WIRE_NAMES) {
            st.serialize_field(name, &self.wire_flag(flag))?;
        }
        st.end()
    }
}

impl<'de> Deserialize<'de> for Groups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Groups, D::Error> {
        struct Flags;
        impl<'de> Visitor<'de> for Flags {
            type Value = Groups;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{} attribute-group flags", WIRE.len())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Groups, A::Error> {
                let mut g = Groups::default();
                for (i, flag) in WIRE.into_iter().enumerate() {
                    let on: bool = seq
                        .next_element()?
                        .ok_or_else(|| serde::de::Error::invalid_length(i, &self))?;
                    g.set_wire_flag(flag, on);
                }
                Ok(g)
            }
        }
        d.deserialize_struct("Groups", &WIRE_NAMES, Flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_but_the_identity_has_its_own_bit_and_its_wire_flag() {
        let mut seen = 0u32;
        for g in Group::FLAGS {
            assert_ne!(g.bit(), 0, "{g:?}");
            assert_eq!(seen & g.bit(), 0, "{g:?}");
            seen |= g.bit();
            let on_wire = WIRE
                .iter()
                .filter(|f| matches!(f, WireFlag::Group(x, _) if *x == g))
                .count();
            assert_eq!(on_wire, 1, "{g:?}");
        }
        assert_eq!(Group::FLAGS.len() + 1, WIRE.len());
    }

    #[test]
    fn a_set_answers_what_it_holds() {
        let g = Groups::of(&[Group::Base, Group::Io]);
        assert!(g.has(Group::Base) && g.has(Group::Io) && g.has(Group::Identity));
        assert!(!g.has(Group::Stat));
        assert!(Groups::default().has(Group::Identity));
        assert!(Groups::default().is_empty());
        assert_eq!(
            g.without(Group::Io).with(Group::Stat),
            Groups::of(&[Group::Base, Group::Stat])
        );
        assert_eq!(Groups::all().iter().count(), Group::FLAGS.len());
        assert_eq!(g.iter().collect::<Vec<_>>(), vec![Group::Base, Group::Io]);
    }

    /// The bytes the query socket carries for a set: one per flag, in the wire's order.
    #[test]
    fn the_wire_is_a_byte_per_flag_in_a_fixed_order() {
        let mut g = Groups::of(&[Group::Base, Group::Login]);
        g.mem_rss_only = true;
        let bytes = postcard::to_allocvec(&g).expect("encode");
        let mut want = vec![0u8; 27];
        want[0] = 1;
        want[7] = 1;
        want[26] = 1;
        assert_eq!(bytes, want);
        assert_eq!(postcard::from_bytes::<Groups>(&bytes).expect("decode"), g);
        assert!(postcard::from_bytes::<Groups>(&bytes[..26]).is_err());
    }
}
