//! Which NUMA node each CPU is in, from a sysfs root (`ps -o numa`).

use std::path::Path;

/// The NUMA node of each CPU, by CPU number, from a sysfs root's
/// `devices/system/node/nodeN/cpuM` entries; -1 for a CPU in no node. What procps shows for
/// `ps -o numa` through libnuma's `numa_node_of_cpu()` (which tries the nodes in order and
/// answers -1 when none has the CPU, as on a kernel without CONFIG_NUMA, where the directory
/// is missing). Empty when the directory cannot be read.
pub fn cpu_nodes(sys_root: &Path) -> Vec<i32> {
    let number = |name: &std::ffi::OsStr, prefix: &str| -> Option<usize> {
        let digits = name.to_str()?.strip_prefix(prefix)?;
        (!digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    let mut nodes: Vec<(usize, std::path::PathBuf)> =
        std::fs::read_dir(sys_root.join("devices/system/node"))
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let e = e.ok()?;
                Some((number(&e.file_name(), "node")?, e.path()))
            })
            .collect();
    nodes.sort();
    let mut map: Vec<i32> = Vec::new();
    for (node, dir) in nodes {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            // Far beyond any machine: a hostile name must not allocate gigabytes.
            let Some(cpu) = number(&e.file_name(), "cpu").filter(|&c| c < 1 << 16) else {
                continue;
            };
            if map.len() <= cpu {
                map.resize(cpu + 1, -1);
            }
            if map[cpu] < 0 {
                map[cpu] = i32::try_from(node).unwrap_or(-1);
            }
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nodes, as a two-socket host's sysfs has them (plus the entries that are not CPUs).
    #[test]
    fn cpus_map_to_their_nodes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().join("devices/system/node");
        for (node, cpus) in [("node0", &[0, 1][..]), ("node1", &[2, 3, 5][..])] {
            std::fs::create_dir_all(base.join(node)).expect("mkdir");
            for c in cpus {
                std::fs::create_dir(base.join(node).join(format!("cpu{c}"))).expect("cpu");
            }
            for other in ["cpulist", "cpumap", "memory0", "cpuidle"] {
                std::fs::write(base.join(node).join(other), "").expect("file");
            }
        }
        std::fs::write(base.join("online"), "0-1\n").expect("online");
        std::fs::create_dir(base.join("node1/cpu99999999999")).expect("odd name");
        assert_eq!(cpu_nodes(tmp.path()), vec![0, 0, 1, 1, -1, 1]);
        // No node directory (a kernel without CONFIG_NUMA): nothing, so every CPU is -1.
        assert!(cpu_nodes(&tmp.path().join("nowhere")).is_empty());
    }
}
