//! Which machine and boot a sample was taken on (format minor 2): column [`HOST`] of a key
//! sample frame holds the reading's [`HostIdentity`] (host name and boot id, raw bytes); a
//! delta's is empty and the decoder takes its key's. Since every segment starts with a key,
//! each segment says where its samples come from; the encoder writes a key early when the
//! identity differs from its key's, and [`crate::Recorder`] opens a new segment then (a host
//! renamed while recording; a reboot restarts the recorder, whose first append opens a new
//! segment anyway), so a segment holds one identity and every sample keeps the one it was
//! read with.
//!
//! A store written before minor 2 has no such column: its samples decode with an unknown
//! identity (both parts `None`), never the identity of the host reading them.
//!
//! Layout: a tag byte (1), then the host name and the boot id, each a presence byte (0/1)
//! and, when present, a length-prefixed blob of at most [`HOSTNAME_MAX_BYTES`] /
//! [`BOOT_ID_MAX_BYTES`] bytes (longer is refused as corrupt: no honest writer stores more).

use tasksnap_model::{HostIdentity, BOOT_ID_MAX_BYTES, HOSTNAME_MAX_BYTES};

use crate::wire::{put_bytes, Reader};
use crate::HistoryError;

/// The sample frame's column of the host identity.
pub(crate) const HOST: usize = 34;

/// Writes `h` into the (empty) column `b` of a key frame.
pub(crate) fn put_host(b: &mut Vec<u8>, h: &HostIdentity) {
    b.push(1);
    for (v, max) in [
        (&h.hostname, HOSTNAME_MAX_BYTES),
        (&h.boot_id, BOOT_ID_MAX_BYTES),
    ] {
        match v {
            None => b.push(0),
            Some(x) => {
                b.push(1);
                // The model bounds both; a caller's longer value is cut, not stored whole.
                put_bytes(b, &x[..x.len().min(max)]);
            }
        }
    }
}

/// The identity in column `r`: `None` when the column is empty (a delta: its key's; a key
/// of a store older than minor 2: unknown).
pub(crate) fn get_host(r: &mut Reader<'_>) -> Result<Option<HostIdentity>, HistoryError> {
    if r.left() == 0 {
        return Ok(None);
    }
    if r.byte()? != 1 {
        return Err(HistoryError::Corrupt("unknown host identity tag"));
    }
    let mut part = |max: usize| -> Result<Option<Vec<u8>>, HistoryError> {
        if !r.bool()? {
            return Ok(None);
        }
        let v = r.bytes()?;
        if v.len() > max {
            return Err(HistoryError::Corrupt("host identity longer than its bound"));
        }
        Ok(Some(v.to_vec()))
    };
    let hostname = part(HOSTNAME_MAX_BYTES)?;
    let boot_id = part(BOOT_ID_MAX_BYTES)?;
    Ok(Some(HostIdentity { hostname, boot_id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_u;

    #[test]
    fn identities_round_trip_as_bytes() {
        for h in [
            HostIdentity::default(),
            HostIdentity {
                hostname: Some(b"../a/b=\0\xff".to_vec()),
                boot_id: Some(b"6b1d3c0e-5a4f-4f2e-8d7c-2b9a1e0f3c44".to_vec()),
            },
            HostIdentity {
                hostname: Some(Vec::new()),
                boot_id: None,
            },
        ] {
            let mut b = Vec::new();
            put_host(&mut b, &h);
            let mut r = Reader::new(&b);
            assert_eq!(get_host(&mut r), Ok(Some(h)));
            assert_eq!(r.left(), 0);
        }
        assert_eq!(get_host(&mut Reader::new(&[])), Ok(None));
    }

    #[test]
    fn hostile_identities_are_refused() {
        // Too long, a bad tag, a bad presence byte, a length past the end.
        let mut long = vec![1, 1];
        put_u(&mut long, 65);
        long.extend([b'x'; 65]);
        long.push(0);
        for bad in [&long[..], &[2][..], &[1, 7][..], &[1, 1, 50, b'x'][..]] {
            assert!(get_host(&mut Reader::new(bad)).is_err(), "{bad:?}");
        }
    }
}
