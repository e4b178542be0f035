//! Times one procfs snapshot: `cargo run --release --example snap -- WORKERS [cmdline]`.
use std::time::Instant;

use tasksnap_collect::testing::procfs::ProcfsCollector;
use tasksnap_collect::testing::Collector;
use tasksnap_model::{Group, Groups, Query, Selector};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workers: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(2);
    let mut g = Groups::of(&[Group::Base, Group::Stat]);
    for a in &args[2..] {
        match a.as_str() {
            "cmdline" => g.insert(Group::Cmdline),
            "cred" => g.insert(Group::CredEffective),
            "status" => g.insert(Group::CredFull),
            "statm" => g.insert(Group::Mem),
            "nostat" => {
                g.remove(Group::Base);
                g.remove(Group::Stat)
            }
            _ => {}
        }
    }
    let mut c = ProcfsCollector::new().expect("proc").with_workers(workers);
    for _ in 0..3 {
        let t = Instant::now();
        let s = c
            .snapshot(&Query::new(Selector::AllProcesses, g))
            .expect("snap");
        eprintln!("{} tasks in {:?}", s.tasks.len(), t.elapsed());
    }
}
