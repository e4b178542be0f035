//! Names payloads: command lines and cgroups by task identity (the parts of a task too big to
//! repeat in every sample), written once per identity per key interval.

use tasksnap_model::TaskId;

use crate::tasks::{get_id, put_id};
use crate::wire::{put_header, put_u, Cols, ColsReader, FrameType, Reader};
use crate::HistoryError;

const N_META: usize = 0;
const N_IDS: [usize; 3] = [1, 2, 3];
const N_CMD: usize = 4;
const N_CG: usize = 5;

/// A task's command line and cgroup (parsed as it is decoded: the one parser, the model's).
pub(crate) type Names = (Option<Vec<u8>>, Option<Box<tasksnap_model::Cgroup>>);

/// Borrowed [`Names`].
type NamesRef<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A decoded names payload: whether it is a key's, the key's time, the entries.
pub(crate) type Decoded = (bool, u64, Vec<(TaskId, Names)>);

fn put_val(b: &mut Vec<u8>, v: Option<&[u8]>, prev: Option<Option<&[u8]>>) {
    if prev == Some(v) {
        put_u(b, 0);
        return;
    }
    match v {
        None => put_u(b, 1),
        Some(x) => {
            put_u(b, x.len() as u64 + 2);
            b.extend_from_slice(x);
        }
    }
}

fn get_val<T: Clone>(
    r: &mut Reader<'_>,
    prev: Option<&Option<T>>,
    make: impl FnOnce(&[u8]) -> T,
) -> Result<Option<T>, HistoryError> {
    match r.u()? {
        0 => prev
            .cloned()
            .ok_or(HistoryError::Corrupt("names refer to a missing entry")),
        1 => Ok(None),
        n => {
            let n = n - 2;
            if n > r.left() as u64 {
                return Err(HistoryError::Truncated);
            }
            Ok(Some(make(r.take(n as usize)?)))
        }
    }
}

/// Encodes entries (ids ascending) as a names payload; `key_at` is the key's time.
pub(crate) fn encode<'a>(
    key: bool,
    key_at: u64,
    entries: impl ExactSizeIterator<Item = (TaskId, Option<&'a [u8]>, Option<&'a [u8]>)>,
) -> Vec<u8> {
    let mut out = Vec::new();
    put_header(
        &mut out,
        if key {
            FrameType::KeyNames
        } else {
            FrameType::DeltaNames
        },
    );
    let mut c = Cols::new(6);
    put_u(c.c(N_META), key_at);
    put_u(c.c(N_META), entries.len() as u64);
    let mut prev_id = TaskId::default();
    let mut prev: Option<NamesRef<'_>> = None;
    for (id, cmd, cg) in entries {
        put_id(&mut c, N_IDS, id, prev_id);
        put_val(c.c(N_CMD), cmd, prev.map(|p| p.0));
        put_val(c.c(N_CG), cg, prev.map(|p| p.1));
        prev_id = id;
        prev = Some((cmd, cg));
    }
    c.finish(&mut out);
    out
}

/// Decodes a names payload: whether it is a key's, the key's time, and the entries.
pub(crate) fn decode(payload: &[u8]) -> Result<Decoded, HistoryError> {
    let mut r = Reader::new(payload);
    let key = match r.header()? {
        FrameType::KeyNames => true,
        FrameType::DeltaNames => false,
        _ => return Err(HistoryError::WrongFrame),
    };
    let mut c = ColsReader::read(&mut r)?;
    let key_at = c.c(N_META).u()?;
    let budget = c.left(N_IDS[0]);
    let n = c.c(N_META).count(budget, 1)?;
    let mut out: Vec<(TaskId, Names)> = Vec::with_capacity(n);
    let mut prev_id = TaskId::default();
    for _ in 0..n {
        let id = get_id(&mut c, N_IDS, prev_id)?;
        let prev = out.last().map(|e| &e.1);
        let cmd = get_val(c.c(N_CMD), prev.map(|p| &p.0), <[u8]>::to_vec)?;
        let cg = get_val(c.c(N_CG), prev.map(|p| &p.1), |b| {
            Box::new(tasksnap_model::Cgroup::parse(b.to_vec()))
        })?;
        out.push((id, (cmd, cg)));
        prev_id = id;
    }
    Ok((key, key_at, out))
}
