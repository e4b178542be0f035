//! Which points of a long series a chart draws: at most [`MAX_POINTS`], keeping every
//! series' lowest and highest value of each stretch of the window (a one-interval spike is
//! drawn at its height, never averaged away). A chart of fewer points draws them all.

/// The most points a chart draws (per series; every series of a chart shares them).
pub const MAX_POINTS: usize = 1500;

/// The indices (ascending) of the points of `len` to draw, for the series `keys` (each of
/// `len` values; NaN is unknown). The window is cut into equal stretches of indices, and
/// each stretch keeps the index of each key's minimum and maximum: at most `max` indices.
pub fn pick(len: usize, keys: &[Vec<f64>], max: usize) -> Vec<usize> {
    let per_bucket = 2 * keys.len().max(1);
    if len <= max || max < per_bucket {
        return (0..len).collect();
    }
    let buckets = max / per_bucket;
    let mut out = Vec::with_capacity(buckets * per_bucket);
    let mut chosen = Vec::with_capacity(per_bucket);
    for b in 0..buckets {
        let (lo, hi) = (b * len / buckets, (b + 1) * len / buckets);
        if lo >= hi {
            continue;
        }
        chosen.clear();
        for k in keys {
            let (mut min, mut max) = (lo, lo);
            for i in lo..hi {
                let v = k[i];
                if v < k[min] || k[min].is_nan() {
                    min = i;
                }
                if v > k[max] || k[max].is_nan() {
                    max = i;
                }
            }
            chosen.push(min);
            chosen.push(max);
        }
        chosen.sort_unstable();
        chosen.dedup();
        out.extend_from_slice(&chosen);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_are_drawn_whole() {
        assert_eq!(pick(5, &[vec![1.0; 5]], 10), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn spikes_survive_and_the_bound_holds() {
        let n = 8640;
        let mut a: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
        a[4321] = 1000.0;
        a[17] = -5.0;
        let b: Vec<f64> = (0..n).map(|i| if i == 999 { 42.0 } else { 1.0 }).collect();
        let keys = [a.clone(), b.clone()];
        let p = pick(n, &keys, 1500);
        assert!(p.len() <= 1500, "{}", p.len());
        assert!(p.windows(2).all(|w| w[0] < w[1]));
        for (k, want) in [(&a, 4321), (&a, 17), (&b, 999)] {
            assert!(p.contains(&want), "{want}");
            let max = p.iter().map(|&i| k[i]).fold(f64::MIN, f64::max);
            let min = p.iter().map(|&i| k[i]).fold(f64::MAX, f64::min);
            assert_eq!(max, k.iter().copied().fold(f64::MIN, f64::max));
            assert_eq!(min, k.iter().copied().fold(f64::MAX, f64::min));
        }
    }

    #[test]
    fn unknown_values_do_not_hide_known_ones() {
        let mut a = vec![f64::NAN; 4000];
        a[3000] = 3.0;
        let p = pick(4000, &[a], 100);
        assert!(p.contains(&3000));
    }
}
