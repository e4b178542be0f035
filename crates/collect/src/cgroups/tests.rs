//! The walk on fake hierarchies built from real kernel files: this machine's v1 `cpu`,
//! `cpuacct`, `memory`, `pids` and v2 root, and a v2 child with the bandwidth and memory
//! files of Documentation/admin-guide/cgroup-v2.rst.

use std::fs;
use std::path::Path;

use tasksnap_model::{CgroupHierarchy, Limit};

use super::*;

fn write(dir: &Path, files: &[(&str, &str)]) {
    fs::create_dir_all(dir).expect("dir");
    fs::write(dir.join("cgroup.procs"), "").expect("cgroup.procs");
    for (name, text) in files {
        fs::write(dir.join(name), text).expect("file");
    }
}

const V1_CPU_STAT: &str =
    "nr_periods 118\nnr_throttled 112\nthrottled_time 3208366426\nnr_bursts 0\nburst_time 0\n";
const V2_ROOT_CPU_STAT: &str = "usage_usec 12171\nuser_usec 0\nsystem_usec 12171\nnice_usec 0\n";
const V2_CPU_STAT: &str = "usage_usec 1000\nuser_usec 600\nsystem_usec 400\nnr_periods 10\n\
     nr_throttled 8\nthrottled_usec 3000\nnr_bursts 0\nburst_usec 0\n";
const CPU_PRESSURE: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=37332\n\
     full avg10=0.00 avg60=0.00 avg300=0.00 total=37282\n";
const NO_MEMORY_LIMIT: &str = "9223372036854771712\n";

/// A proc root whose mountinfo shows v1 `cpu`, `cpuacct`, `memory`, `pids`, `freezer` and
/// the v2 hierarchy, each a directory of the temp tree with real files in it.
fn fake_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().expect("tempdir");
    let cg = t.path().join("cg");
    let mut mountinfo = String::new();
    for (i, (name, fstype, opts)) in [
        ("cpu", "cgroup", "rw,cpu"),
        ("cpuacct", "cgroup", "rw,cpuacct"),
        ("memory", "cgroup", "rw,memory"),
        ("pids", "cgroup", "rw,pids"),
        ("freezer", "cgroup", "rw,freezer"),
        ("unified", "cgroup2", "rw"),
    ]
    .iter()
    .enumerate()
    {
        let dir = cg.join(name);
        mountinfo.push_str(&format!(
            "{} 31 0:{} / {} rw,relatime - {fstype} {fstype} {opts}\n",
            32 + i,
            29 + i,
            dir.display()
        ));
    }
    fs::create_dir_all(t.path().join("proc/self")).expect("proc");
    fs::write(t.path().join("proc/self/mountinfo"), mountinfo).expect("mountinfo");
    let quota = [
        ("cpu.cfs_quota_us", "-1\n"),
        ("cpu.cfs_period_us", "100000\n"),
    ];
    write(
        &cg.join("cpu"),
        &[quota[0], quota[1], ("cpu.stat", V1_CPU_STAT)],
    );
    write(
        &cg.join("cpu/tsx44a"),
        &[
            ("cpu.cfs_quota_us", "20000\n"),
            ("cpu.cfs_period_us", "100000\n"),
            ("cpu.stat", V1_CPU_STAT),
        ],
    );
    write(
        &cg.join("cpuacct"),
        &[("cpuacct.usage", "21910245500431\n")],
    );
    write(&cg.join("cpuacct/tsx44a"), &[("cpuacct.usage", "5000\n")]);
    let oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n";
    let memory = [
        ("memory.usage_in_bytes", "425984\n"),
        ("memory.limit_in_bytes", NO_MEMORY_LIMIT),
        ("memory.oom_control", oom),
    ];
    write(&cg.join("memory"), &memory);
    write(
        &cg.join("memory/tsx44a"),
        &[
            memory[0],
            ("memory.limit_in_bytes", "1073741824\n"),
            ("memory.failcnt", "7\n"),
            ("memory.memsw.usage_in_bytes", "430080\n"),
        ],
    );
    write(&cg.join("pids"), &[]);
    write(
        &cg.join("pids/tsx44a"),
        &[("pids.current", "2\n"), ("pids.max", "max\n")],
    );
    write(&cg.join("freezer/frozen"), &[("freezer.state", "THAWED\n")]);
    write(
        &cg.join("unified"),
        &[
            ("cpu.stat", V2_ROOT_CPU_STAT),
            ("cpu.pressure", CPU_PRESSURE),
            (
                "io.pressure",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=2965\n",
            ),
        ],
    );
    write(
        &cg.join("unified/app"),
        &[
            ("cpu.stat", V2_CPU_STAT),
            ("cpu.max", "20000 100000\n"),
            ("memory.current", "8192\n"),
            ("memory.max", "max\n"),
            (
                "memory.events",
                "low 0\nhigh 0\nmax 5\noom 2\noom_kill 1\noom_group_kill 0\n",
            ),
            ("pids.current", "3\n"),
            ("memory.swap.current", "4096\n"),
            (
                "io.stat",
                "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n",
            ),
        ],
    );
    t
}

fn find<'a>(l: &'a CgroupListing, v2: bool, path: &str) -> &'a CgroupCounters {
    l.cgroups
        .iter()
        .find(|c| c.path == path.as_bytes() && (c.hierarchy == CgroupHierarchy::V2) == v2)
        .unwrap_or_else(|| panic!("{path} (v2 {v2}) in {l:#?}"))
}

#[test]
fn v1_hierarchies_merge_by_path() {
    let t = fake_tree();
    let l = list(&t.path().join("proc"), 8);
    assert!(l.notes.is_empty(), "{:?}", l.notes);
    let c = find(&l, false, "/tsx44a");
    let controllers = ["cpu", "cpuacct", "memory", "pids"]
        .map(String::from)
        .to_vec();
    assert_eq!(c.hierarchy, CgroupHierarchy::V1(controllers));
    assert_eq!(c.cpu_usage_ns, Some(5000));
    assert_eq!(c.cpu_quota_us, Some(Limit::At(20_000)));
    assert_eq!(c.cpu_period_us, Some(100_000));
    assert_eq!(c.cpu_quota_cpus(), Some(0.2));
    assert_eq!(c.cpu_periods, Some(118));
    assert_eq!(c.cpu_throttled_periods, Some(112));
    assert_eq!(c.cpu_throttled_ns, Some(3_208_366_426));
    assert_eq!(c.memory_current_bytes, Some(425_984));
    assert_eq!(c.memory_limit_bytes, Some(Limit::At(1 << 30)));
    assert_eq!(c.oom_kills, None, "no memory.oom_control in the child");
    assert_eq!(c.memory_max_events, Some(7));
    assert_eq!(c.swap_current_bytes, Some(4096), "memsw less memory");
    assert_eq!(c.pids_current, Some(2));
    assert!(c.pressure.is_empty());
    let root = find(&l, false, "/");
    assert_eq!(root.cpu_usage_ns, Some(21_910_245_500_431));
    assert_eq!(root.cpu_quota_us, Some(Limit::Unlimited));
    assert_eq!(root.memory_limit_bytes, Some(Limit::Unlimited));
    assert_eq!(root.oom_kills, Some(0));
    assert_eq!(
        root.pids_current, None,
        "the v1 pids root has no pids.current"
    );
    // freezer has none of the counters: its hierarchy is not walked.
    assert!(l.cgroups.iter().all(|c| c.path != b"/frozen"));
    assert_eq!(l.cgroups.len(), 4, "{l:#?}");
}

#[test]
fn v2_files_parse() {
    let t = fake_tree();
    let l = list(&t.path().join("proc"), 8);
    let root = find(&l, true, "/");
    assert_eq!(root.cpu_usage_ns, Some(12_171_000));
    assert_eq!(root.cpu_quota_us, None);
    assert_eq!(root.cpu_throttled_ns, None);
    let cpu = root.pressure_of("cpu").expect("cpu.pressure");
    assert_eq!(cpu.some.map(|p| p.total_us), Some(37_332));
    assert_eq!(cpu.full.map(|p| p.total_us), Some(37_282));
    assert!(root.pressure_of("io").is_some() && root.pressure_of("memory").is_none());
    let app = find(&l, true, "/app");
    assert_eq!(app.cpu_usage_ns, Some(1_000_000));
    assert_eq!(app.cpu_quota_us, Some(Limit::At(20_000)));
    assert_eq!(app.cpu_period_us, Some(100_000));
    assert_eq!(app.cpu_periods, Some(10));
    assert_eq!(app.cpu_throttled_periods, Some(8));
    assert_eq!(app.cpu_throttled_ns, Some(3_000_000));
    assert_eq!(app.memory_current_bytes, Some(8192));
    assert_eq!(app.memory_limit_bytes, Some(Limit::Unlimited));
    assert_eq!(app.oom_kills, Some(1));
    assert_eq!(app.memory_max_events, Some(5));
    assert_eq!(app.memory_oom_events, Some(2));
    assert_eq!(app.memory_high_events, Some(0));
    assert_eq!(app.swap_current_bytes, Some(4096));
    assert_eq!(
        [
            app.io_read_bytes,
            app.io_write_bytes,
            app.io_read_ops,
            app.io_write_ops
        ],
        [Some(1), Some(2), Some(3), Some(4)]
    );
    assert_eq!(app.pids_current, Some(3));
}

#[test]
fn links_are_not_followed() {
    let t = fake_tree();
    let outside = t.path().join("outside");
    write(
        &outside,
        &[("cpu.stat", V1_CPU_STAT), ("cpu.cfs_quota_us", "1\n")],
    );
    let cpu = t.path().join("cg/cpu");
    std::os::unix::fs::symlink(&outside, cpu.join("evil")).expect("dir link");
    fs::create_dir(cpu.join("linked")).expect("dir");
    fs::write(cpu.join("linked/cgroup.procs"), "").expect("procs");
    std::os::unix::fs::symlink(outside.join("cpu.stat"), cpu.join("linked/cpu.stat"))
        .expect("file link");
    std::os::unix::fs::symlink(
        "../../../outside/cpu.cfs_quota_us",
        cpu.join("linked/cpu.cfs_quota_us"),
    )
    .expect("relative link");
    let l = list(&t.path().join("proc"), 8);
    assert!(l.cgroups.iter().all(|c| c.path != b"/evil"), "{l:#?}");
    let linked = find(&l, false, "/linked");
    assert_eq!(linked.cpu_periods, None);
    assert_eq!(linked.cpu_quota_us, None);
}

#[test]
fn a_removed_cgroup_is_skipped() {
    let t = fake_tree();
    let cpu = t.path().join("cg/cpu");
    let dir = rustix::fs::openat(
        rustix::fs::CWD,
        &cpu,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .expect("open");
    // Listed, then gone before it was opened.
    assert!(open_child(dir.as_fd(), c"gone").is_none());
    // Opened, then removed: its files and cgroup.procs are gone.
    let child = open_child(dir.as_fd(), c"tsx44a").expect("child");
    fs::remove_dir_all(cpu.join("tsx44a")).expect("rmdir");
    let kind = Kind::V1 {
        cpu: true,
        cpuacct: false,
        memory: false,
        pids: false,
        blkio: false,
    };
    let h = CgroupHierarchy::V1(vec!["cpu".into()]);
    assert!(read_cgroup(child.as_fd(), b"/tsx44a".to_vec(), kind, &h).is_none());
}

#[test]
fn depth_limit_is_noted() {
    let t = fake_tree();
    for d in ["a", "a/b", "a/b/c"] {
        write(&t.path().join("cg/cpu").join(d), &[]);
    }
    let l = list(&t.path().join("proc"), 1);
    assert!(l.cgroups.iter().any(|c| c.path == b"/a"));
    assert!(l.cgroups.iter().all(|c| c.path != b"/a/b"));
    assert_eq!(l.notes, ["1 cgroups deeper than 1 not shown"]);
    let l = list(&t.path().join("proc"), 8);
    assert!(l.cgroups.iter().any(|c| c.path == b"/a/b/c"));
}

#[test]
fn no_mount_table_is_a_note() {
    let t = tempfile::tempdir().expect("tempdir");
    let l = list(t.path(), 8);
    assert!(l.cgroups.is_empty());
    assert_eq!(l.notes.len(), 1);
}

#[test]
fn count_limit_is_noted() {
    let t = fake_tree();
    let l = list_at_most(&t.path().join("proc"), 8, 3);
    assert_eq!(l.cgroups.len(), 3, "v2 /, /app, the v1 cpu root: {l:#?}");
    assert_eq!(l.notes, ["stopped after 3 cgroups; the rest are not shown"]);
}

#[test]
fn garbage_in_every_file_is_none_never_a_panic() {
    let t = fake_tree();
    let garbage: [&[u8]; 4] = [
        b"\xff\xfe\x00",
        b"max max max\n",
        b"-99999999999999999999",
        b"",
    ];
    for (i, dir) in [
        "cg/cpu/tsx44a",
        "cg/cpuacct/tsx44a",
        "cg/memory/tsx44a",
        "cg/unified/app",
    ]
    .iter()
    .enumerate()
    {
        let dir = t.path().join(dir);
        for e in fs::read_dir(&dir).expect("dir").flatten() {
            if e.file_name() != "cgroup.procs" {
                fs::write(e.path(), garbage[i % garbage.len()]).expect("garbage");
            }
        }
    }
    let l = list(&t.path().join("proc"), 8);
    for (v2, path) in [(false, "/tsx44a"), (true, "/app")] {
        let c = find(&l, v2, path);
        assert_eq!(c.cpu_usage_ns, None, "{c:?}");
        assert_eq!(c.cpu_quota_us, None, "{c:?}");
        assert_eq!(c.memory_limit_bytes, None, "{c:?}");
        assert_eq!(c.cpu_throttled_ns, None, "{c:?}");
    }
}
