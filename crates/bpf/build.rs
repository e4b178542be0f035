//! Compiles the BPF objects (src/c/task_iter.bpf.c, the task iterator and walk,
//! src/c/states.bpf.c, the thread-state accounting, src/c/exits.bpf.c, the exit records, and
//! src/c/changes.bpf.c, a live view's change set) with clang and generates their libbpf-rs
//! skeletons. Without clang, or with TASKSNAP_NO_BPF set, the crate still builds without
//! them: the `tasksnap_bpf` cfg is then unset, [`built`](src/lib.rs) says why, and
//! `tasksnap_bpf::select!` gives dependents their no-BPF module.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The C sources, all in src/c. vmlinux.h is the one committed copy (generated with
/// `bpftool btf dump file /sys/kernel/btf/vmlinux format c` on Linux 6.18).
const OBJECTS: [(&str, &str); 4] = [
    ("task_iter.bpf.c", "task_iter.skel.rs"),
    ("states.bpf.c", "states.skel.rs"),
    ("exits.bpf.c", "exits.skel.rs"),
    ("changes.bpf.c", "changes.skel.rs"),
];
const HEADERS: [&str; 5] = ["compat.h", "exits.h", "record.h", "states.h", "vmlinux.h"];
/// What the pin tag hashes: the task iterator's sources (pinned sets are only ever its).
const PINNED_SOURCES: [&str; 3] = ["task_iter.bpf.c", "record.h", "compat.h"];

fn main() {
    println!("cargo:rustc-check-cfg=cfg(tasksnap_bpf)");
    for f in OBJECTS.iter().map(|o| o.0).chain(HEADERS) {
        println!("cargo:rerun-if-changed=src/c/{f}");
    }
    println!("cargo:rerun-if-env-changed=TASKSNAP_NO_BPF");
    println!("cargo:rustc-env=TASKSNAP_BPF_TAG={:016x}", source_tag());
    if std::env::var_os("TASKSNAP_NO_BPF").is_some() {
        println!("cargo:rustc-env=TASKSNAP_BPF_MISSING=TASKSNAP_NO_BPF was set at build time");
        return;
    }
    let clang_ok = Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !clang_ok {
        println!(
            "cargo:warning=clang not found: building tasksnap without BPF (no task iterator, \
             no exact thread states; install clang and rebuild; ./x does it for you as root)"
        );
        println!("cargo:rustc-env=TASKSNAP_BPF_MISSING=clang was missing at build time");
        return;
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    for (source, skel) in OBJECTS {
        let result = libbpf_cargo::SkeletonBuilder::new()
            .source(Path::new("src/c").join(source))
            .clang_args([
                format!("-D__TARGET_ARCH_{target_arch}"),
                "-Isrc/c".to_string(),
                "-Wall".to_string(),
            ])
            .build_and_generate(out_dir.join(skel));
        if let Err(e) = result {
            panic!("building the BPF object {source} failed: {e:#}");
        }
    }
    println!("cargo:rustc-cfg=tasksnap_bpf");
}

/// A tag for this build's task programs (FNV-1a of their sources): pinned programs live under
/// it, so a tasksnap only ever reuses programs built from the same sources and record layout.
fn source_tag() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for file in PINNED_SOURCES {
        for b in std::fs::read(Path::new("src/c").join(file)).unwrap_or_default() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
