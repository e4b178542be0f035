//! Property tests over the frame scanner: truncated, flipped and garbage-extended bytes never
//! panic, every frame returned is one written, and only frames overlapping the damage are lost.

use proptest::prelude::*;
use tasksnap_store::{encode, scan};

type Written = Vec<(u64, Vec<u8>, usize, usize)>; // time, payload, offset, end

fn write(frames: &[Vec<u8>]) -> (Vec<u8>, Written) {
    let mut b = Vec::new();
    let mut w = Vec::new();
    for (i, p) in frames.iter().enumerate() {
        let at = b.len();
        encode(1, i % 3 == 0, i as u64 * 10, p, &mut b).expect("encode");
        w.push((i as u64 * 10, p.clone(), at, b.len()));
    }
    (b, w)
}

fn got(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    scan(bytes)
        .frames
        .into_iter()
        .map(|f| (f.header.time_ns, f.payload))
        .collect()
}

fn payloads() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(0u8..4, 0..300), 1..20)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn truncation_keeps_every_whole_frame(frames in payloads(), cut in any::<prop::sample::Index>()) {
        let (b, w) = write(&frames);
        let cut = cut.index(b.len() + 1);
        let want: Vec<_> = w.iter().filter(|f| f.3 <= cut).map(|f| (f.0, f.1.clone())).collect();
        prop_assert_eq!(got(&b[..cut]), want);
    }

    #[test]
    fn flips_lose_only_the_frames_they_hit(frames in payloads(), flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4)) {
        let (mut b, w) = write(&frames);
        let mut hit = Vec::new();
        for (i, x) in &flips {
            let at = i.index(b.len());
            b[at] ^= x;
            hit.push(at);
        }
        let want: Vec<_> = w.iter().filter(|f| !hit.iter().any(|&h| h >= f.2 && h < f.3)).map(|f| (f.0, f.1.clone())).collect();
        prop_assert_eq!(got(&b), want);
    }

    #[test]
    fn garbage_after_the_end_loses_nothing(frames in payloads(), garbage in prop::collection::vec(any::<u8>(), 0..2000)) {
        let (mut b, w) = write(&frames);
        b.extend_from_slice(&garbage);
        let want: Vec<_> = w.iter().map(|f| (f.0, f.1.clone())).collect();
        prop_assert_eq!(got(&b), want);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4000)) {
        let _ = scan(&bytes);
    }
}
