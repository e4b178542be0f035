//! The walk's output memory: an arena is a mmap-able BPF array of `TS_CHUNK_BYTES` chunks that
//! this process creates and maps read-only; the walk program (`walk_tasks` in
//! task_iter.bpf.c) writes records straight into it, so a pass makes no read() and copies
//! nothing to user space. Also runs the walk: one `BPF_PROG_TEST_RUN` per shard thread, through
//! the [`Walker`] programs.rs loaded (or opened from pins).
//!
//! A pinned walk program is shared by every tasksnap on the machine, so it finds each
//! process's arena in its `arenas` hash of maps under a key, registered for the length of one
//! pass and removed after it.
//!
//! The chunks are written by the kernel, but they are parsed as untrusted bytes all the same
//! (decode.rs): every record is bounds-checked against its chunk.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use libbpf_rs::MapCore;

use super::programs::{self, Walker};
use tasksnap_bpf::skel::task_iter as skel;

/// Bytes per chunk (record.h `TS_CHUNK_BYTES`).
pub const CHUNK_BYTES: usize = 65536;

/// The records of one shard's walk: chunks `first..=last` of the arena.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardOut {
    /// First chunk of the shard.
    pub first: usize,
    /// Last chunk written (equal to `first` when the shard wrote little or nothing).
    pub last: usize,
    /// Records written.
    pub records: u32,
    /// Tasks the walk could not write because the shard's chunks were full.
    pub overflow: u32,
    /// Tasks walked (in the reader's namespace and this shard), written or not.
    pub tasks: u32,
    /// When the walk began (CLOCK_MONOTONIC, ns).
    pub started_ns: u64,
    /// Its command lines, when asked for: output chunks `lines_first..=lines_last`.
    pub lines_first: usize,
    /// Last output chunk written.
    pub lines_last: usize,
    /// Lines written (flagged ones included).
    pub lines: u32,
    /// Lines read without the mmap lock.
    pub lines_lockless: u32,
    /// Paging levels of the direct map the walk found, 0 when none (then no lines).
    pub dmap_levels: u32,
}

/// What a walk writes (record.h `TS_WALK_*`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkMode {
    /// [`WALK_ALL`], [`WALK_CHANGED`] or [`WALK_ROLL`].
    pub mode: u32,
    /// For [`WALK_CHANGED`]: when the reader's last pass began ([`ShardOut::started_ns`]).
    pub since_ns: u64,
    /// With [`WALK_ALL`] and an arena with a [`CmdRegion`]: each process's command line
    /// too, read without the mmap lock (x86-64).
    pub lines: bool,
}

/// A record for every task.
pub const WALK_ALL: u32 = 0;
/// Records for every thread of each process that ran since `since_ns`.
pub const WALK_CHANGED: u32 = 1;
/// Only tids (a u32 each), no records.
pub const WALK_ROLL: u32 = 2;

/// The tids a [`WALK_ROLL`] wrote into `arena` for shard `out`: packed u32s, each chunk
/// filled before the next is started.
pub fn roll_tids(arena: &Arena, out: &ShardOut) -> Vec<u32> {
    const PER_CHUNK: usize = CHUNK_BYTES / 4;
    let mut tids = Vec::with_capacity(out.records as usize);
    for k in 0..out.records as usize {
        let chunk = out.first + k / PER_CHUNK;
        if chunk >= arena.chunks() {
            break;
        }
        let at = (k % PER_CHUNK) * 4;
        let bytes = &arena.chunk(chunk)[at..at + 4];
        tids.push(u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
    }
    tids
}

/// Requests per chunk (record.h `TS_CMD_REQS_PER_CHUNK`).
pub const CMD_REQS_PER_CHUNK: usize = CHUNK_BYTES / std::mem::size_of::<CmdRequest>();
/// Output chunks of each command-line shard at least (2 MiB): a copy run that fills them
/// stops, its lines are taken, and the next run starts where it stopped.
pub const CMD_OUT_CHUNKS: usize = 32;
/// Bytes of command line a process is expected to take in the output, header included,
/// when sizing the walk's share (its lines have no second run: a process that does not fit
/// is copied by pid list instead).
const CMD_BYTES_PER_PROCESS: usize = 128;
/// What an output chunk holds at least (task_iter.bpf.c `CMD_ROOM`: a record that might
/// not fit starts the next chunk).
const CMD_CHUNK_ROOM: usize = CHUNK_BYTES - 2 * 4096 - 2 * 16;

/// One process whose command line the copy reads (record.h `ts_cmd_req`).
pub type CmdRequest = skel::types::ts_cmd_req;

/// Where command lines go in an arena: after the walk's chunks, the request chunks of the
/// copy by pid list, then `out_per_shard` output chunks per shard, written by the walk
/// (`args_*` of `ts_walk_args`) and, after it, by the copy for what the walk left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CmdRegion {
    /// First request chunk.
    pub req_chunk: usize,
    /// Request chunks: room for `req_chunks * CMD_REQS_PER_CHUNK` processes.
    pub req_chunks: usize,
    /// First output chunk (shard `s` writes from `out_chunk + s * out_per_shard`).
    pub out_chunk: usize,
    /// Output chunks per shard.
    pub out_per_shard: usize,
    /// Shards, each with its own output chunks.
    pub shards: usize,
}

impl CmdRegion {
    /// A region starting at chunk `at` for `processes` processes (and a quarter more).
    pub fn at(at: usize, processes: u64, shards: usize) -> CmdRegion {
        let shards = shards.max(1);
        let room = processes + processes / 4 + 64;
        let req_chunks = (room as usize).div_ceil(CMD_REQS_PER_CHUNK).max(1);
        let per_shard_bytes = (room as usize).div_ceil(shards) * CMD_BYTES_PER_PROCESS;
        CmdRegion {
            req_chunk: at,
            req_chunks,
            out_chunk: at + req_chunks,
            out_per_shard: per_shard_bytes.div_ceil(CMD_CHUNK_ROOM).max(CMD_OUT_CHUNKS),
            shards,
        }
    }

    /// One past its last chunk.
    pub fn end(&self) -> usize {
        self.out_chunk + self.shards * self.out_per_shard
    }

    /// How many processes its request chunks hold.
    pub fn capacity(&self) -> usize {
        self.req_chunks * CMD_REQS_PER_CHUNK
    }

    /// Shard `shard`'s output chunks.
    pub fn out_of(&self, shard: usize) -> std::ops::Range<usize> {
        let first = self.out_chunk + shard * self.out_per_shard;
        first..first + self.out_per_shard
    }
}

/// A mapped arena.
pub struct Arena {
    fd: OwnedFd,
    ptr: *mut libc::c_void,
    /// The first chunk mapped (0 but for a view).
    base: usize,
    chunks: usize,
    /// Chunks the map has (mapped or not).
    pub entries: usize,
    /// The walk writes chunks `0..walk_chunks` (the rest, when there is a rest, is the
    /// command-line copy's [`CmdRegion`]).
    pub walk_chunks: usize,
    /// The command-line copy's chunks, when the arena has room for them.
    pub cmd: Option<CmdRegion>,
    /// Its key in the program's arenas map.
    slot: u32,
    /// The slot's lock, for an arena of a pinned set.
    lock: Option<SlotLock>,
    /// Whether it was already registered in its slot (a pinned set's arena, left by an
    /// earlier run) rather than created by this process.
    pub reused: bool,
}

// SAFETY: the mapping is read-only for this process and lives as long as the Arena; the raw
// pointer is only dereferenced through `bytes()`, which borrows the Arena. Sharing it between
// threads (shard threads only use the fd) is as safe as sharing a `&[u8]`.
unsafe impl Send for Arena {}
// SAFETY: see above: no interior mutability on this side of the mapping.
unsafe impl Sync for Arena {}

debug_showing!(Arena, chunks);

impl Arena {
    /// Creates and maps an arena of `chunks` chunks for `slot` (needs CAP_BPF, so this is
    /// done before capabilities are dropped). The kernel allocates and zeroes all of it at
    /// creation.
    fn new(chunks: usize, slot: u32, map_chunks: usize) -> io::Result<Arena> {
        let chunks = chunks.max(1);
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
            // Must match the template in task_iter.bpf.c (struct arena) to be accepted as an
            // inner map; BPF_F_INNER_MAP lets the number of entries differ.
            map_flags: libbpf_sys::BPF_F_MMAPABLE | libbpf_sys::BPF_F_INNER_MAP,
            ..Default::default()
        };
        let name = c"tasksnap_arena";
        // SAFETY: `name` is NUL-terminated and `opts` is a valid, sized options struct; both
        // outlive the call.
        let fd = unsafe {
            libbpf_sys::bpf_map_create(
                libbpf_sys::BPF_MAP_TYPE_ARRAY,
                name.as_ptr(),
                4,
                CHUNK_BYTES as u32,
                chunks as u32,
                &opts,
            )
        };
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: bpf_map_create returned a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::map(fd, slot, map_chunks)
    }

    /// Maps the first `want` chunks (at most all) of an existing arena read-only, after
    /// checking that it is one (an array of CHUNK_BYTES values, mmap-able): its size comes
    /// from the kernel's description of it.
    fn map(fd: OwnedFd, slot: u32, want: usize) -> io::Result<Arena> {
        Self::map_range(fd, slot, 0, want)
    }

    /// Maps chunks `first..first + want` (at most to the end) of an existing arena
    /// read-only; see [`Arena::map`]. The kernel maps every page of the range at once
    /// (`remap_vmalloc_range()`), so all of it counts in this process's RSS: map only what
    /// is read.
    fn map_range(fd: OwnedFd, slot: u32, first: usize, want: usize) -> io::Result<Arena> {
        let mut info = libbpf_sys::bpf_map_info::default();
        let mut len = std::mem::size_of::<libbpf_sys::bpf_map_info>() as u32;
        // SAFETY: `info` is a writable bpf_map_info and `len` its size, both valid for the call.
        let r = unsafe {
            libbpf_sys::bpf_map_get_info_by_fd(
                fd.as_raw_fd(),
                (&mut info as *mut libbpf_sys::bpf_map_info).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::from_raw_os_error(-r));
        }
        if info.type_ != libbpf_sys::BPF_MAP_TYPE_ARRAY
            || info.value_size as usize != CHUNK_BYTES
            || info.map_flags & libbpf_sys::BPF_F_MMAPABLE == 0
            || info.max_entries == 0
        {
            return Err(io::Error::other("not a tasksnap arena"));
        }
        if first >= info.max_entries as usize {
            return Err(io::Error::other("chunk range outside the arena"));
        }
        let entries = info.max_entries as usize;
        let chunks = (entries - first).min(want.max(1));
        let bytes = chunks * CHUNK_BYTES;
        // SAFETY: mapping `bytes` bytes of a mmap-able array map of exactly that size
        // (entries of CHUNK_BYTES, a multiple of the page size, are laid out back to back),
        // read-only and shared; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                (first * CHUNK_BYTES) as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Arena {
            fd,
            ptr,
            base: first,
            chunks,
            entries,
            walk_chunks: chunks,
            cmd: None,
            slot,
            lock: None,
            reused: false,
        })
    }

    /// A second read-only mapping of the same arena (its own descriptor, no slot lock), for
    /// a thread that may outlive this value: a command-line copy abandoned at its deadline
    /// finishes on its own.
    /// It maps only chunks `first..first + n`.
    pub fn view(&self, first: usize, n: usize) -> io::Result<Arena> {
        let mut a = Self::map_range(self.fd.try_clone()?, self.slot, first, n)?;
        a.walk_chunks = 0;
        a.cmd = self.cmd;
        Ok(a)
    }

    /// Overwrites chunk `i` with `bytes` (a test's sentinel).
    #[cfg(test)]
    pub fn fill_chunk(&self, i: usize, byte: u8) -> io::Result<()> {
        self.put_chunk(i, &vec![byte; CHUNK_BYTES])
    }

    /// Writes chunk `i` (one map update: this process's mapping stays read-only).
    fn put_chunk<T: Copy>(&self, i: usize, chunk: &[T]) -> io::Result<()> {
        if std::mem::size_of_val(chunk) != CHUNK_BYTES {
            return Err(io::Error::other("a chunk is CHUNK_BYTES bytes"));
        }
        let key = i as u32;
        // SAFETY: the key is a u32 and the value CHUNK_BYTES bytes (checked above), the map's
        // key and value sizes; both outlive the call.
        let r = unsafe {
            libbpf_sys::bpf_map_update_elem(
                self.fd.as_raw_fd(),
                (&key as *const u32).cast(),
                chunk.as_ptr().cast(),
                0,
            )
        };
        if r < 0 {
            return Err(io::Error::from_raw_os_error(-r));
        }
        Ok(())
    }

    /// Writes `reqs` into the request chunks of `region` (one map update per chunk: this
    /// process's mapping stays read-only).
    pub fn put_cmd_requests(&self, region: &CmdRegion, reqs: &[CmdRequest]) -> io::Result<()> {
        if reqs.len() > region.capacity() || region.end() > self.entries {
            return Err(io::Error::other(
                "more processes than the request chunks hold",
            ));
        }
        let mut chunk = vec![CmdRequest::default(); CMD_REQS_PER_CHUNK];
        for (i, part) in reqs.chunks(CMD_REQS_PER_CHUNK).enumerate() {
            chunk[..part.len()].copy_from_slice(part);
            // CMD_REQS_PER_CHUNK requests of 16 bytes: one chunk.
            self.put_chunk(region.req_chunk + i, &chunk)?;
        }
        Ok(())
    }

    /// Its slot in the walk program's arenas map.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// How many chunks it has (one past the last mapped).
    pub fn chunks(&self) -> usize {
        self.base + self.chunks
    }

    /// Chunk `i`'s bytes as the last walk left them.
    pub fn chunk(&self, i: usize) -> &[u8] {
        assert!(
            (self.base..self.base + self.chunks).contains(&i),
            "chunk {i} outside {}..{}",
            self.base,
            self.base + self.chunks
        );
        let i = i - self.base;
        // SAFETY: the mapping covers chunks * CHUNK_BYTES readable bytes for the Arena's
        // life, and `i` is in range. The kernel writes it only during a walk of its slot,
        // and only this process walks that slot (a private map, or the slot's lock), inside
        // `Walker::walk()`, which takes `&Arena` while BpfCollector hands out chunk borrows
        // only between passes: no write races with this borrow.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.cast::<u8>().add(i * CHUNK_BYTES).cast_const(),
                CHUNK_BYTES,
            )
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new() mapped; nothing borrows it past the Arena.
        unsafe {
            libc::munmap(self.ptr, self.chunks * CHUNK_BYTES);
        }
    }
}

/// Chunks needed for `tasks` records of `record_bytes` each over `shards` shards, with room
/// for tasks forked meanwhile and for shards that get more than their share.
pub fn chunks_for(tasks: u64, record_bytes: usize, shards: usize) -> usize {
    let shards = shards.max(1);
    let per_shard_records = tasks.div_ceil(shards as u64) as usize;
    let per_chunk = (CHUNK_BYTES / record_bytes.max(1)).saturating_sub(1).max(1);
    let per_shard = per_shard_records.div_ceil(per_chunk);
    // A quarter more, and two chunks, per shard.
    (per_shard + per_shard / 4 + 2) * shards
}

/// Slots of a pinned set: how many tasksnaps can walk at once (the others use the iterator).
const SLOTS: u32 = 16;
/// Where the slot locks are (a directory of root's, writable by root only; the lock files
/// are root's 0600).
pub const LOCK_DIR: &str = "/run/tasksnap";

/// The lock of one slot of the pinned arenas map, held for the life of the arena.
#[derive(Debug)]
struct SlotLock {
    _file: std::fs::File,
}

/// Takes the first free slot: an exclusive flock on its lock file, which the kernel releases
/// when the holder exits, however it exits. The directory must be root's and writable by
/// nobody else; lock files are opened without following a link or truncating
/// (tasksnap-safefile).
fn claim_slot() -> io::Result<(u32, SlotLock)> {
    // 0755: the query socket of `tasksnap serve` is there too, for every user to reach; the
    // locks themselves are root's 0600 files, which no one else may open (and so flock).
    let dir = tasksnap_safefile::Dir::create_private(std::path::Path::new(LOCK_DIR), 0o755)?;
    for slot in 0..SLOTS {
        let name = format!("arena-{}-{slot}.lock", programs::TAG);
        let file = dir.open_own(&name, 0o600)?;
        // SAFETY: flock on a descriptor we own, valid for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok((slot, SlotLock { _file: file }));
        }
    }
    Err(io::Error::other(format!(
        "all {SLOTS} walk slots are in use by other tasksnaps"
    )))
}

impl Walker {
    /// Duplicates of the descriptors.
    pub fn try_clone(&self) -> Option<Walker> {
        Some(Walker {
            shared: self.shared,
            prog: self.prog.try_clone().ok()?,
            cmd_prog: match &self.cmd_prog {
                Some(p) => Some(p.try_clone().ok()?),
                None => None,
            },
            lines_prog: match &self.lines_prog {
                Some(p) => Some(p.try_clone().ok()?),
                None => None,
            },
            list_prog: match &self.list_prog {
                Some(p) => Some(p.try_clone().ok()?),
                None => None,
            },
            arenas: libbpf_rs::MapHandle::try_from(&self.arenas).ok()?,
        })
    }

    /// Makes `current` an arena of at least `chunks` chunks, registered with the walk
    /// program; on failure `current` is left as it was. In a pinned set the arena a slot had
    /// is reused when it is big enough (no allocation, and no registration: replacing an
    /// entry of a map of maps waits for an RCU grace period, 4-20 ms here); it stays
    /// allocated for the next run until `tasksnap unpin`. Only the first `map_chunks` are
    /// mapped here (the rest is written and read by other
    /// means: see [`CmdRegion`]).
    pub fn arena(
        &self,
        chunks: usize,
        map_chunks: usize,
        current: &mut Option<Arena>,
    ) -> io::Result<()> {
        let mut claimed = None;
        let slot = match current {
            Some(a) => a.slot,
            None if self.shared => {
                let (slot, lock) = claim_slot()?;
                claimed = Some(lock);
                slot
            }
            // A private set (loaded by this process): its map is nobody else's.
            None => 0,
        };
        // Only the chunks asked for are mapped (and count in this process's RSS) even when
        // the slot's arena is bigger.
        let reused = self
            .registered(slot)
            .and_then(|fd| Arena::map(fd, slot, map_chunks).ok())
            .filter(|a| a.entries >= chunks);
        let mut a = match reused {
            Some(mut a) => {
                a.reused = true;
                a
            }
            None => {
                let a = Arena::new(chunks, slot, map_chunks)?;
                self.arenas
                    .update(
                        &slot.to_ne_bytes(),
                        &a.fd.as_fd().as_raw_fd().to_ne_bytes(),
                        libbpf_rs::MapFlags::ANY,
                    )
                    .map_err(io::Error::other)?;
                a
            }
        };
        a.lock = match current.as_mut() {
            Some(old) => old.lock.take(),
            None => claimed,
        };
        *current = Some(a);
        Ok(())
    }

    /// The arena registered in `slot`, when there is one (opening a map by id needs
    /// CAP_SYS_ADMIN: this is done before capabilities are dropped).
    fn registered(&self, slot: u32) -> Option<OwnedFd> {
        let id = self
            .arenas
            .lookup(&slot.to_ne_bytes(), libbpf_rs::MapFlags::ANY)
            .ok()??;
        let id = u32::from_ne_bytes(id.get(..4)?.try_into().ok()?);
        // SAFETY: bpf_map_get_fd_by_id takes a plain id; it returns a new descriptor or a
        // negative errno.
        let fd = unsafe { libbpf_sys::bpf_map_get_fd_by_id(id) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a new descriptor that nothing else owns.
        Some(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// One pass with `groups` into `arena`, split over `shards` threads (the caller's alone
    /// when 1), each writing its own equal range of chunks.
    pub fn walk(
        &self,
        arena: &Arena,
        groups: u32,
        shards: usize,
        how: WalkMode,
    ) -> io::Result<Vec<ShardOut>> {
        // Command lines go to the region's output chunks, one share per shard, when the
        // caller asked for them (WalkMode::lines) and the region has a share for each.
        let lines = arena
            .cmd
            .filter(|r| how.lines && how.mode == WALK_ALL && r.shards >= shards)
            .filter(|_| self.lines_prog.is_some());
        let prog = match (&lines, &self.lines_prog) {
            (Some(_), Some(p)) => p,
            _ => &self.prog,
        };
        let walk_chunks = arena.walk_chunks.clamp(1, arena.chunks());
        let shards = shards.clamp(1, walk_chunks);
        let per_shard = walk_chunks / shards;
        let one = |shard: usize| -> io::Result<ShardOut> {
            let mut args = skel::types::ts_walk_args {
                key: arena.slot,
                groups,
                shard: shard as u32,
                nshards: shards as u32,
                first_chunk: (shard * per_shard) as u32,
                nchunks: per_shard as u32,
                mode: how.mode,
                since_ns: how.since_ns,
                ..Default::default()
            };
            if let Some(r) = lines {
                let out = r.out_of(shard);
                args.args_first_chunk = out.start as u32;
                args.args_nchunks = out.len() as u32;
            }
            run(prog, &mut args)?;
            let first = args.first_chunk as usize;
            let last = (args.cur_chunk as usize).clamp(first, first + per_shard - 1);
            let lines_first = args.args_first_chunk as usize;
            let lines_end = lines_first + args.args_nchunks as usize;
            Ok(ShardOut {
                first,
                last,
                records: args.records,
                overflow: args.overflow,
                tasks: args.tasks,
                started_ns: args.started_ns,
                lines_first,
                lines_last: (args.args_cur_chunk as usize)
                    .clamp(lines_first, lines_end.saturating_sub(1).max(lines_first)),
                lines: args.args_records,
                lines_lockless: args.args_lockless,
                dmap_levels: args.dmap_levels,
            })
        };
        if shards == 1 {
            return one(0).map(|s| vec![s]);
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = (1..shards)
                .map(|shard| s.spawn(move || one(shard)))
                .collect();
            let mut out = vec![one(0)];
            for h in handles {
                out.push(
                    h.join()
                        .unwrap_or_else(|_| Err(io::Error::other("a walk thread panicked"))),
                );
            }
            out.into_iter().collect()
        })
    }
}
impl Walker {
    /// The records of every thread of the processes `pids` (initial pid namespace, at most
    /// [`PIDS_PER_CHUNK`]) into `arena` (`walk_listed`, task_iter.bpf.c): the pids go in the
    /// last chunk of the walk's, the records before it. `Ok(None)` when this walker has not
    /// got the program or the reader is in another pid namespace (the program refuses).
    pub fn walk_listed(
        &self,
        arena: &Arena,
        groups: u32,
        pids: &[u32],
    ) -> io::Result<Option<ShardOut>> {
        let Some(prog) = &self.list_prog else {
            return Ok(None);
        };
        let walk_chunks = arena.walk_chunks.clamp(1, arena.chunks());
        if pids.len() > PIDS_PER_CHUNK || walk_chunks < 2 {
            return Err(io::Error::other("more pids than a chunk holds"));
        }
        let req_chunk = walk_chunks - 1;
        let mut chunk = vec![0u32; PIDS_PER_CHUNK];
        chunk[..pids.len()].copy_from_slice(pids);
        arena.put_chunk(req_chunk, &chunk)?;
        let mut args = skel::types::ts_walk_args {
            key: arena.slot,
            groups,
            nshards: 1,
            first_chunk: 0,
            nchunks: req_chunk as u32,
            req_chunk: req_chunk as u32,
            req_n: pids.len() as u32,
            ..Default::default()
        };
        match run(prog, &mut args) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(None),
            r => r?,
        }
        Ok(Some(ShardOut {
            first: 0,
            last: (args.cur_chunk as usize).min(req_chunk - 1),
            records: args.records,
            overflow: args.overflow,
            tasks: args.tasks,
            started_ns: args.started_ns,
            ..ShardOut::default()
        }))
    }
}

/// Pids a [`Walker::walk_listed`] takes at once (record.h `TS_PIDS_PER_CHUNK`).
pub const PIDS_PER_CHUNK: usize = CHUNK_BYTES / 4;

/// Copies the command lines of requests `first..end` of `view`'s region as shard `shard`, in
/// as many runs of `prog` (`copy_cmdlines`) as its output chunks need, appending each run's
/// records to `lines` back to back (`decode::cmd_chunk` parses them). The caller decodes:
/// a map of 50,000 lines built on this thread would sit in its own malloc arena (peak RSS of
/// `ps -ef` went from 56 to 83 MB that way).
pub fn copy_cmdlines(
    prog: &OwnedFd,
    view: &Arena,
    shard: usize,
    first: usize,
    end: usize,
    locked_only: bool,
    lines: &mut Vec<u8>,
) -> io::Result<CopyCounts> {
    let mut counts = CopyCounts::default();
    let Some(region) = view.cmd else {
        return Err(io::Error::other("the arena has no command-line region"));
    };
    let out = region.out_of(shard);
    let (out_first, out_n) = (out.start, out.len());
    if shard >= region.shards || out.end > view.chunks() {
        return Err(io::Error::other("command-line shard outside the arena"));
    }
    let mut next = first;
    while next < end {
        let mut args = skel::types::ts_cmd_args {
            key: view.slot,
            req_chunk: region.req_chunk as u32,
            req_first: next as u32,
            req_end: end as u32,
            first_chunk: out_first as u32,
            nchunks: out_n as u32,
            locked_only: u32::from(locked_only),
            ..Default::default()
        };
        run(prog, &mut args)?;
        counts.lockless += u64::from(args.lockless);
        counts.dmap_levels = args.dmap_levels;
        let last = (args.cur_chunk as usize).clamp(out_first, out_first + out_n - 1);
        take_lines(view, out_first..=last, lines);
        let done = args.next as usize;
        if done <= next || done > end {
            return Err(io::Error::other(format!(
                "the command-line copy made no progress at request {next}"
            )));
        }
        next = done;
    }
    Ok(counts)
}

/// Appends the whole records of output chunks `chunks` of `view` to `lines`, back to back
/// (`decode::cmd_chunk` parses them).
pub fn take_lines(view: &Arena, chunks: std::ops::RangeInclusive<usize>, lines: &mut Vec<u8>) {
    for i in chunks {
        let chunk = view.chunk(i);
        lines.extend_from_slice(&chunk[..super::decode::cmd_chunk_len(chunk)]);
    }
}

/// What a command-line copy did besides its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyCounts {
    /// Lines read without the target's mmap lock (task_iter.bpf.c, `args_lockless`).
    pub lockless: u64,
    /// Paging levels of the kernel's direct map the program found (4 or 5), 0 when it found
    /// none (then every line was copied through the mmap lock).
    pub dmap_levels: u32,
}

/// Runs a syscall program once in this thread with `args` as its context (in and out): the
/// shared loader's [`tasksnap_bpf::loader::run_syscall`].
pub(super) fn run<T>(prog: &OwnedFd, args: &mut T) -> io::Result<()> {
    tasksnap_bpf::loader::run_syscall(prog, args)
}
