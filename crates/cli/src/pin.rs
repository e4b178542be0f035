//! `tasksnap pin` and `tasksnap unpin`: keep the BPF programs loaded between runs.
//!
//! Loading costs 35-50 ms per run (libbpf's CO-RE relocation against the kernel's BTF, then
//! the verifier); a pinned set in bpffs is opened in well under a millisecond. The pins are
//! root-only (`Host::pin_programs`; docs/bpf.md) and tied to this build: another build of
//! tasksnap loads its own programs and ignores them.

use std::process::ExitCode;

use tasksnap_collect::Host;

/// `tasksnap pin`.
pub fn pin() -> ExitCode {
    match Host::pin_programs() {
        Ok(dir) => {
            say!(
                "tasksnap: pinned the BPF task iterators at {} (root only); runs as root now \
                 open them instead of loading. `tasksnap unpin` removes them.",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Err(why) => {
            warn!("tasksnap pin: {why}");
            ExitCode::from(1)
        }
    }
}

/// `tasksnap unpin`.
pub fn unpin() -> ExitCode {
    match Host::unpin_programs() {
        Ok(true) => {
            say!("tasksnap: removed the pinned BPF programs");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            say!("tasksnap: nothing was pinned");
            ExitCode::SUCCESS
        }
        Err(why) => {
            warn!("tasksnap unpin: {why}");
            ExitCode::from(1)
        }
    }
}
