//! Takes N readings with the sampler and prints what each cost (wall and CPU time of this
//! process), the tasks and threads it held: a quick look at a sampler's cost on this host.
//! `cargo run --release -p tasksnap-collect --example sample_cost -- 10 1.0`

use std::time::{Duration, Instant};

use tasksnap_collect::{Host, ReadingOptions};

fn cpu_ns() -> u64 {
    tasksnap_sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let every: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let (c0, w0) = (cpu_ns(), Instant::now());
    let mut s = Host::from_env().open_readings(ReadingOptions::default())?;
    println!(
        "open: {:.1} ms wall, {:.1} ms cpu; tasks by {:?}, states by {:?}",
        w0.elapsed().as_secs_f64() * 1e3,
        (cpu_ns() - c0) as f64 / 1e6,
        s.report().backend,
        s.states_report()
    );
    for _ in 0..n {
        let (c0, w0) = (cpu_ns(), Instant::now());
        let r = s.read_mut()?;
        let threads = r.states.as_ref().map(|s| s.threads.len()).unwrap_or(0);
        println!(
            "read: {:.1} ms wall, {:.1} ms cpu; {} tasks, {} thread totals, {} with cmdline",
            w0.elapsed().as_secs_f64() * 1e3,
            (cpu_ns() - c0) as f64 / 1e6,
            r.snapshot.tasks.len(),
            threads,
            r.snapshot
                .tasks
                .iter()
                .filter(|t| t.cmdline.is_some())
                .count()
        );
        std::thread::sleep(Duration::from_secs_f64(every));
    }
    Ok(())
}
