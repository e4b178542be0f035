//! Compiles the thread-state accounting (src/bpf/states.bpf.c) with clang and generates its
//! libbpf-rs skeleton, as crates/collect/build.rs does for the task iterator. Without clang
//! (or with TASKSNAP_NO_BPF set) the crate still builds: the `tasksnap_bpf` cfg is then unset
//! and the BPF source reports why it is unavailable, leaving the /proc fallback.
//!
//! vmlinux.h is the workspace's one committed copy, in crates/collect/src/bpf.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(tasksnap_bpf)");
    println!("cargo:rerun-if-changed=src/bpf/states.bpf.c");
    println!("cargo:rerun-if-changed=src/bpf/states.h");
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
            "cargo:warning=clang not found: building tasksnap states without BPF accounting \
             (install clang and rebuild; ./x does it for you as root)"
        );
        return;
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("states.skel.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    let result = libbpf_cargo::SkeletonBuilder::new()
        .source("src/bpf/states.bpf.c")
        .clang_args([
            format!("-D__TARGET_ARCH_{target_arch}"),
            "-Isrc/bpf".to_string(),
            "-I../collect/src/bpf".to_string(),
            "-Wall".to_string(),
        ])
        .build_and_generate(&out);
    match result {
        Ok(()) => println!("cargo:rustc-cfg=tasksnap_bpf"),
        Err(e) => panic!("building the BPF thread-state accounting failed: {e:#}"),
    }
}
