//! The seed 004 reproduction: N "query" threads each mmap(MAP_POPULATE) a file and munmap it in
//! a loop, so that they queue on the process's mmap lock (mmap and munmap take it for
//! writing, populating takes it for reading), as the seed's 16 query threads did.
//!
//!     cargo run --release -p tasksnap-states --example mmap_contend -- [THREADS] [MIB] [SECONDS]
//!
//! Defaults: 16 threads, a 4 MiB file (in the page cache, as the seed's column files were),
//! 60 seconds. Prints its pid, then runs until the time is up.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut num =
        |default: u64| -> u64 { args.next().and_then(|a| a.parse().ok()).unwrap_or(default) };
    let threads = num(16) as usize;
    let len = (num(4) as usize) << 20;
    let seconds = num(60);
    let dir = std::env::temp_dir().join(format!("mmap_contend.{}", std::process::id()));
    let mut file = std::fs::File::create(&dir)?;
    file.write_all(&vec![1u8; len])?;
    file.sync_all()?;
    let file = std::fs::File::open(&dir)?;
    std::fs::remove_file(&dir)?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    println!("{}", std::process::id());
    std::io::stdout().flush()?;

    let stop = Arc::new(AtomicBool::new(false));
    let maps = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let (stop, maps) = (stop.clone(), maps.clone());
            std::thread::Builder::new()
                .name(format!("query{i}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if tasksnap_loadgen::map_populated_once(fd, len) {
                            maps.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
        })
        .collect::<Result<_, _>>()?;
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let n = maps.load(Ordering::Relaxed);
    eprintln!(
        "{n} mmap+munmap in {:.1} s: {:.2} ms each per thread",
        start.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64() * 1e3 * threads as f64 / n.max(1) as f64
    );
    Ok(())
}
