//! Builds a store that spans a day, for the seek benchmark (`bench/record.sh`, SEEK=1): N real
//! readings of this host taken one after the other with the recorder's sampler and
//! `Recorder`, each stamped INTERVAL seconds after the one before, so that the store has a day's
//! samples in hourly segments as `tasksnap record --interval INTERVAL` would have written
//! over a day. Prints the first and last sample times (epoch seconds).
//!
//! `cargo run --release -p tasksnap --example day_store -- DIR [SAMPLES] [INTERVAL]`
//! (defaults: 8640 samples, 10 s: a day).

use tasksnap_collect::{Host, ReadingOptions};
use tasksnap_history::Recorder;
use tasksnap_store::WriterOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: day_store DIR [SAMPLES] [INTERVAL]")?;
    let n: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8640);
    let interval_ns: u64 = args
        .next()
        .map(|a| a.parse::<u64>())
        .transpose()?
        .unwrap_or(10)
        * 1_000_000_000;
    let mut recorder = Recorder::create(
        std::path::Path::new(&dir),
        WriterOptions::default(),
        tasksnap_history::DEFAULT_KEY_EVERY,
    )?;
    let mut sampler = Host::from_env().open_readings(ReadingOptions::default())?;
    let start_unix = sampler.read_mut()?.snapshot.taken_at_unix_ns - n * interval_ns;
    for i in 0..n {
        let mut r = sampler.read_mut()?.clone();
        let shift = r.snapshot.taken_at_unix_ns - (start_unix + i * interval_ns);
        r.snapshot.taken_at_unix_ns -= shift;
        recorder.append(&r)?;
    }
    recorder.finish()?;
    println!(
        "{} {}",
        start_unix / 1_000_000_000,
        (start_unix + (n - 1) * interval_ns) / 1_000_000_000
    );
    Ok(())
}
