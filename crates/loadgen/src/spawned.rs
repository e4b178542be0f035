//! Processes a test starts and must not leave behind, however it ends: one child
//! ([`Guard`]) or a few in a process group of their own ([`ProcessGroup`]), killed and reaped
//! on drop.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// A child killed (SIGKILL) and reaped when the guard drops: a test that panics leaves no
/// process behind.
#[derive(Debug)]
pub struct Guard(pub Child);

impl Guard {
    /// Spawns `cmd` under a guard.
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Guard> {
        cmd.spawn().map(Guard)
    }

    /// Its pid.
    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Commands started in one process group of their own (the first is its leader), killed
/// with one SIGKILL to the group and reaped on drop: for tests that need a few plain
/// processes (`sleep 1000`, busy loops) rather than a whole load.
#[derive(Debug)]
pub struct ProcessGroup(Vec<Child>);

impl ProcessGroup {
    /// Starts `n` copies of `args` (program and arguments) in one new process group.
    pub fn spawn(n: usize, args: &[&str]) -> std::io::Result<ProcessGroup> {
        let mut group = ProcessGroup(Vec::new());
        for _ in 0..n {
            let pgid = group.0.first().map_or(0, |c| c.id() as i32);
            group.0.push(
                Command::new(args[0])
                    .args(&args[1..])
                    .process_group(pgid)
                    .stdin(Stdio::null())
                    .spawn()?,
            );
        }
        Ok(group)
    }

    /// Their pids, in the order they were started.
    pub fn pids(&self) -> Vec<i32> {
        self.0.iter().map(|c| c.id() as i32).collect()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(leader) = self.0.first() {
            // SAFETY: kill on the process group this handle created.
            unsafe { libc::kill(-(leader.id() as i32), libc::SIGKILL) };
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}
