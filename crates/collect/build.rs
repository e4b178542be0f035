//! Compiles the BPF task iterator (src/bpf/task_iter.bpf.c) with clang and generates its
//! libbpf-rs skeleton. Without clang the crate still builds, without the BPF backend: the
//! `tasksnap_bpf` cfg is then unset and the backend reports why it is unavailable.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(tasksnap_bpf)");
    println!("cargo:rerun-if-changed=src/bpf/task_iter.bpf.c");
    println!("cargo:rerun-if-changed=src/bpf/record.h");
    println!("cargo:rerun-if-env-changed=TASKSNAP_NO_BPF");
    if std::env::var_os("TASKSNAP_NO_BPF").is_some() {
        return;
    }
    let clang_ok = Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !clang_ok {
        println!(
            "cargo:warning=clang not found: building tasksnap without the BPF backend \
             (install clang and rebuild; ./x does it for you as root)"
        );
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("task_iter.skel.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    let result = libbpf_cargo::SkeletonBuilder::new()
        .source("src/bpf/task_iter.bpf.c")
        .clang_args([
            format!("-D__TARGET_ARCH_{target_arch}"),
            "-Isrc/bpf".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(&out);
    match result {
        Ok(()) => {
            println!("cargo:rustc-cfg=tasksnap_bpf");
            println!("cargo:rustc-env=TASKSNAP_BPF_TAG={:016x}", source_tag());
        }
        Err(e) => panic!("building the BPF task iterator failed: {e:#}"),
    }
}

/// A tag for this build's BPF programs (FNV-1a of their sources): pinned programs live under
/// it, so a tasksnap only ever reuses programs built from the same sources and record layout.
fn source_tag() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for file in ["src/bpf/task_iter.bpf.c", "src/bpf/record.h"] {
        for b in std::fs::read(file).unwrap_or_default() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}
