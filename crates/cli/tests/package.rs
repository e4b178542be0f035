//! The Debian package (packaging/deb/build-deb) built from this test's own binary: its
//! metadata and contents, then installed with `dpkg --root` into a temporary directory (never
//! the real system: its dpkg database and log are checked unchanged), where the binary runs,
//! the units pass `systemd-analyze verify` and keep the hardening the service needs, the man
//! page renders without a warning, the Grafana dashboard and Prometheus rules are packaging/'s,
//! and removal takes every file away again.
//!
//! Needs dpkg, dpkg-deb, systemd-analyze, groff and man (./x test installs them); without
//! them the test is skipped, saying why, except under TASKSNAP_REQUIRE_PRIVILEGED=1 (CI),
//! where a skip is a failure. dpkg --root extracts files owned by root: root only, likewise.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{failed_saying, text, TASKSNAP};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const UNITS: [&str; 3] = [
    "tasksnap-pin.service",
    "tasksnap-serve.service",
    "tasksnap-record.service",
];

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("{cmd:?}: cannot run: {e}"))
}

/// Runs `cmd` and insists on exit status 0.
fn ok(cmd: &mut Command) -> Output {
    let o = run(cmd);
    assert!(
        o.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether the test can run here: root and the tools; otherwise why not (printed as a skip,
/// or a failure in CI).
fn can_run() -> bool {
    let required = std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1");
    let mut missing: Vec<&str> = [
        "dpkg",
        "dpkg-deb",
        "systemd-analyze",
        "groff",
        "man",
        "gzip",
    ]
    .into_iter()
    .filter(|t| !have(t))
    .collect();
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        missing.push("root");
    }
    if missing.is_empty() {
        return true;
    }
    let why = format!("the package test needs {}", missing.join(", "));
    assert!(
        !required,
        "{why}, and TASKSNAP_REQUIRE_PRIVILEGED=1 forbids skipping"
    );
    eprintln!("SKIP {why} (./x test installs the tools; CI runs it)");
    false
}

/// The fields of a control stanza (`Name: value`, continuation lines dropped).
fn field<'a>(control: &'a str, name: &str) -> Option<&'a str> {
    control
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// The package names in a Depends field (`a (>= 1), b | c` gives a, b, c).
fn depends_names(depends: &str) -> Vec<String> {
    depends
        .split([',', '|'])
        .filter_map(|d| d.split_whitespace().next())
        .map(|n| n.split(':').next().unwrap_or(n).to_string())
        .collect()
}

/// `Key=value` settings of a unit file, in order (comments and section headers left out).
fn settings(unit: &str) -> Vec<(String, String)> {
    unit.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn values(s: &[(String, String)], key: &str) -> Vec<String> {
    s.iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .collect()
}

fn one(s: &[(String, String)], key: &str, unit: &str) -> String {
    let v = values(s, key);
    assert_eq!(v.len(), 1, "{unit}: {key}= should be set once: {v:?}");
    v[0].clone()
}

/// The hardening the units must keep, and what they must not take away: the settings the
/// service was measured to need (docs/service.md).
fn check_hardening(name: &str, unit: &str) {
    let s = settings(unit);
    for (key, want) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectControlGroups", "yes"),
        ("RestrictNamespaces", "yes"),
        ("LockPersonality", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("SystemCallArchitectures", "native"),
        // tasksnap reads every process of /proc.
        ("ProtectProc", "default"),
        ("ProcSubset", "all"),
        ("ReadOnlyPaths", "/proc /sys"),
    ] {
        assert_eq!(one(&s, key, name), want, "{name}: {key}=");
    }
    // Root: tasksnap loads BPF only for euid 0.
    assert!(values(&s, "User").is_empty(), "{name}: runs as root");
    // It would hide /proc/kallsyms (wait reasons) and keep /sys/fs/bpf read-only.
    assert!(
        values(&s, "ProtectKernelTunables")
            .iter()
            .all(|v| v == "no"),
        "{name}: ProtectKernelTunables hides /proc/kallsyms and bpffs"
    );
    let filter = one(&s, "SystemCallFilter", name);
    let calls: BTreeSet<&str> = filter.split_whitespace().collect();
    for c in ["@system-service", "bpf", "perf_event_open"] {
        assert!(
            calls.contains(c),
            "{name}: SystemCallFilter lacks {c}: {filter}"
        );
    }
    let caps: BTreeSet<String> = one(&s, "CapabilityBoundingSet", name)
        .split_whitespace()
        .map(String::from)
        .collect();
    let (want_caps, families): (&[&str], &str) = match name {
        "tasksnap-pin.service" => (&["CAP_BPF", "CAP_PERFMON"], "AF_UNIX"),
        "tasksnap-serve.service" => (
            &[
                "CAP_BPF",
                "CAP_PERFMON",
                "CAP_SYSLOG",
                "CAP_DAC_READ_SEARCH",
                "CAP_SYS_PTRACE",
            ],
            "AF_INET AF_INET6 AF_UNIX",
        ),
        _ => (
            &[
                "CAP_BPF",
                "CAP_PERFMON",
                "CAP_SYSLOG",
                "CAP_DAC_READ_SEARCH",
                "CAP_SYS_PTRACE",
            ],
            "AF_UNIX",
        ),
    };
    let want_caps: BTreeSet<String> = want_caps.iter().map(|c| c.to_string()).collect();
    assert_eq!(caps, want_caps, "{name}: CapabilityBoundingSet");
    assert_eq!(one(&s, "RestrictAddressFamilies", name), families, "{name}");
    if name != "tasksnap-pin.service" {
        // CAP_SYSLOG is needed for /proc/kallsyms; ProtectKernelLogs would remove it.
        assert!(
            values(&s, "ProtectKernelLogs").iter().all(|v| v == "no"),
            "{name}: ProtectKernelLogs removes CAP_SYSLOG"
        );
        assert_eq!(one(&s, "RuntimeDirectory", name), "tasksnap", "{name}");
        assert_eq!(one(&s, "RuntimeDirectoryPreserve", name), "yes", "{name}");
        assert_eq!(
            one(&s, "Wants", name),
            "tasksnap-pin.service",
            "{name}: wants pin"
        );
        assert!(
            one(&s, "After", name).contains("tasksnap-pin.service"),
            "{name}: after pin"
        );
    } else {
        assert_eq!(one(&s, "Type", name), "oneshot");
        assert_eq!(one(&s, "RemainAfterExit", name), "yes");
        assert_eq!(one(&s, "ExecStart", name), "/usr/bin/tasksnap pin");
        assert_eq!(one(&s, "ExecStop", name), "/usr/bin/tasksnap unpin");
        assert_eq!(one(&s, "ReadWritePaths", name), "/sys/fs/bpf");
    }
}

/// A copy of the host's dpkg status stanzas for `packages`, so that the temporary root's
/// database holds what the package depends on, as installed here.
fn status_of(packages: &[String]) -> String {
    let mut status = String::new();
    for p in packages {
        let o = ok(Command::new("dpkg-query").args(["-s", p]));
        status.push_str(text(&o.stdout).trim_end());
        status.push_str("\n\n");
    }
    status
}

fn dpkg(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", root.display()))
        .arg(format!("--log={}", root.join("dpkg.log").display()))
        // The maintainer scripts run outside the root, with DPKG_ROOT set, where they do
        // nothing (packaging/deb/postinst); inside it there is no /bin/sh to run them.
        .arg("--force-script-chrootless")
        .args(args)
        .env("LC_ALL", "C");
    c
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.insert(rel.display().to_string());
            }
        }
    }
    out
}

fn gunzip(path: &Path) -> String {
    text(&ok(Command::new("gzip").arg("-dc").arg(path)).stdout)
}

#[test]
fn the_package_installs_runs_verifies_and_removes_cleanly() {
    if !can_run() {
        return;
    }
    let host_status_before = std::fs::read("/var/lib/dpkg/status").ok();
    let host_log_before = std::fs::metadata("/var/log/dpkg.log").map(|m| m.len()).ok();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (deb, arch) = build(tmp.path());
    let depended_on = the_metadata_is_this_builds(&deb, &arch);
    let expected = the_contents_are_roots_with_these_modes(&deb);
    let root = tmp.path().join("root");
    install(&root, &deb, &depended_on, &expected);

    // The installed binary runs.
    let v = ok(Command::new(root.join("usr/bin/tasksnap")).arg("--version"));
    assert_eq!(text(&v.stdout).trim(), format!("tasksnap {VERSION}"));

    the_units_are_the_repositorys_and_verify(&root);
    the_record_unit_takes_this_builds_options(&root, tmp.path());
    the_serve_unit_takes_this_builds_options(&root);
    the_man_page_renders_without_a_warning(&root);
    the_dashboard_and_rules_are_the_repositorys(&root);
    removal_takes_every_file_away(&root, &expected);

    // The real system's dpkg database and log were not touched.
    assert_eq!(
        std::fs::read("/var/lib/dpkg/status").ok(),
        host_status_before,
        "the host's dpkg status changed"
    );
    assert_eq!(
        std::fs::metadata("/var/log/dpkg.log").map(|m| m.len()).ok(),
        host_log_before,
        "the host's dpkg log grew"
    );
}

/// Builds the package of this test's binary into `tmp/out`, uncompressed (xz of a debug
/// binary takes seconds; it is dpkg-deb's business), leaving nothing else in `tmp`: its
/// path and this host's architecture.
fn build(tmp: &Path) -> (PathBuf, String) {
    let out_dir = tmp.join("out");
    let built = ok(Command::new(top().join("packaging/deb/build-deb"))
        .arg(TASKSNAP)
        .arg(&out_dir)
        .env("TASKSNAP_DEB_COMPRESSION", "none")
        .env("TMPDIR", tmp));
    let arch = text(&ok(Command::new("dpkg").arg("--print-architecture")).stdout)
        .trim()
        .to_string();
    let deb = PathBuf::from(text(&built.stdout).trim());
    assert_eq!(
        deb.file_name().and_then(|n| n.to_str()),
        Some(format!("tasksnap_{VERSION}_{arch}.deb").as_str())
    );
    assert!(deb.is_file(), "{} not written", deb.display());
    // The staging directory is gone.
    let left: Vec<_> = std::fs::read_dir(tmp)
        .expect("tmp")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("out")],
        "build-deb left {left:?}"
    );
    (deb, arch)
}

/// The control fields are this build's, it depends on the libraries it links (libc with a
/// version) and has its maintainer scripts: the names of the packages it depends on.
fn the_metadata_is_this_builds(deb: &Path, arch: &str) -> Vec<String> {
    let info = text(&ok(Command::new("dpkg-deb").arg("--field").arg(deb)).stdout);
    assert_eq!(field(&info, "Package"), Some("tasksnap"));
    assert_eq!(field(&info, "Version"), Some(VERSION));
    assert_eq!(field(&info, "Architecture"), Some(arch));
    assert_eq!(field(&info, "Section"), Some("admin"));
    assert!(field(&info, "Maintainer").is_some_and(|m| m.contains('@')));
    assert!(field(&info, "Description").is_some_and(|d| !d.is_empty()));
    let depends = field(&info, "Depends").expect("Depends").to_string();
    let names = depends_names(&depends);
    for lib in ["libc6", "libelf1", "zlib1g"] {
        assert!(
            names.iter().any(|n| n == lib),
            "Depends lacks {lib}: {depends}"
        );
    }
    let libc = depends
        .split(',')
        .map(str::trim)
        .find(|d| d.starts_with("libc6 "))
        .unwrap_or("");
    assert!(
        libc.starts_with("libc6 (>= 2."),
        "libc6 without a version: {depends}"
    );
    let info_all = text(&ok(Command::new("dpkg-deb").arg("--info").arg(deb)).stdout);
    for script in ["postinst", "prerm", "postrm"] {
        assert!(info_all.contains(script), "no {script} in {info_all}");
    }
    names
}

/// Contents: exactly these files, root's, with these modes. The files.
fn the_contents_are_roots_with_these_modes(deb: &Path) -> BTreeSet<String> {
    let contents = text(&ok(Command::new("dpkg-deb").arg("--contents").arg(deb)).stdout);
    let mut files = BTreeSet::new();
    for line in contents.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert!(cols.len() >= 6, "odd line: {line}");
        assert_eq!(cols[1], "root/root", "not root's: {line}");
        if !cols[0].starts_with('d') {
            let path = cols[5].trim_start_matches('.').to_string();
            let want_mode = if path == "/usr/bin/tasksnap" {
                "-rwxr-xr-x"
            } else {
                "-rw-r--r--"
            };
            assert_eq!(cols[0], want_mode, "{line}");
            files.insert(path);
        }
    }
    let expected: BTreeSet<String> = [
        "/usr/bin/tasksnap",
        "/lib/systemd/system/tasksnap-pin.service",
        "/lib/systemd/system/tasksnap-serve.service",
        "/lib/systemd/system/tasksnap-record.service",
        "/usr/share/man/man1/tasksnap.1.gz",
        "/usr/share/doc/tasksnap/copyright",
        "/usr/share/doc/tasksnap/service.md",
        "/usr/share/tasksnap/grafana/tasksnap.json",
        "/usr/share/tasksnap/prometheus/tasksnap-rules.yml",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(files, expected, "package contents");
    files
}

/// Installs `deb` into the temporary root `root`, whose database holds this host's copies
/// of the packages depended on: dpkg checks the Depends against them (no --force-depends).
/// Installed, with every file of `expected`.
fn install(root: &Path, deb: &Path, depended_on: &[String], expected: &BTreeSet<String>) {
    let admin = root.join("var/lib/dpkg");
    for d in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(d)).expect("admin dir");
    }
    std::fs::write(admin.join("status"), status_of(depended_on)).expect("status");
    ok(dpkg(root, &["--install"]).arg(deb));
    let st = text(&ok(&mut dpkg(root, &["--status", "tasksnap"])).stdout);
    assert_eq!(field(&st, "Status"), Some("install ok installed"), "{st}");
    let installed = files_under(root);
    for f in expected {
        assert!(
            installed.contains(&f[1..]),
            "{f} not installed: {installed:?}"
        );
    }
}

/// The units are the repository's, keep their hardening and pass `systemd-analyze verify`
/// as installed.
/// The Grafana dashboard and the Prometheus rules under /usr/share/tasksnap are packaging/'s
/// (serve_dashboard.rs tests what they hold).
fn the_dashboard_and_rules_are_the_repositorys(root: &Path) {
    for (installed, source) in [
        (
            "usr/share/tasksnap/grafana/tasksnap.json",
            "packaging/grafana/tasksnap.json",
        ),
        (
            "usr/share/tasksnap/prometheus/tasksnap-rules.yml",
            "packaging/prometheus/tasksnap-rules.yml",
        ),
    ] {
        let got = std::fs::read(root.join(installed)).expect(installed);
        let want = std::fs::read(top().join(source)).expect(source);
        assert!(got == want, "{installed} differs from {source}");
    }
}

fn the_units_are_the_repositorys_and_verify(root: &Path) {
    for unit in UNITS {
        let installed_unit =
            std::fs::read_to_string(root.join("lib/systemd/system").join(unit)).expect("unit");
        let source = std::fs::read_to_string(top().join("packaging/systemd").join(unit))
            .expect("unit source");
        assert_eq!(
            installed_unit, source,
            "{unit} differs from packaging/systemd"
        );
        check_hardening(unit, &installed_unit);
    }
    // verify with --root looks for every unit inside the root: the targets the units are
    // ordered against come from the host, into the root's /etc (not the package's /lib).
    let etc_units = root.join("etc/systemd/system");
    std::fs::create_dir_all(&etc_units).expect("etc dir");
    for dir in ["/lib/systemd/system", "/usr/lib/systemd/system"] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name.to_string_lossy().ends_with(".target") && !etc_units.join(&name).exists() {
                std::fs::copy(e.path(), etc_units.join(&name)).expect("copy target");
            }
        }
    }
    for unit in UNITS {
        // Documentation=man:tasksnap(1) is looked up with man: in the root's man pages.
        let o = run(Command::new("systemd-analyze")
            .arg("verify")
            .arg(format!("--root={}", root.display()))
            .arg(format!("/lib/systemd/system/{unit}"))
            .env("MANPATH", root.join("usr/share/man"))
            .env("SYSTEMD_LOG_COLOR", "0"));
        // verify exits 0 on unknown keys and invalid values, only saying so: any output is a
        // failure.
        assert!(
            o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
            "systemd-analyze verify {unit} ({}):\n{}{}",
            o.status,
            text(&o.stdout),
            text(&o.stderr)
        );
    }
}

/// The record unit's options are this build's: aimed at a file, not a store, the installed
/// binary takes every option (a usage error exits 2), then stops at the store (3), before
/// reading the host, whatever its size.
fn the_record_unit_takes_this_builds_options(root: &Path, tmp: &Path) {
    let record = std::fs::read_to_string(root.join("lib/systemd/system/tasksnap-record.service"))
        .expect("record unit");
    let exec = one(&settings(&record), "ExecStart", "record");
    let mut args: Vec<String> = exec.split_whitespace().skip(1).map(String::from).collect();
    assert_eq!(args.first().map(String::as_str), Some("record"));
    let dir = args
        .iter()
        .position(|a| a == "--dir")
        .expect("record --dir");
    assert_eq!(args[dir + 1], "/var/lib/tasksnap/history");
    let not_a_store = tmp.join("not-a-store");
    std::fs::write(&not_a_store, "").expect("file");
    args[dir + 1] = not_a_store.display().to_string();
    let o = run(Command::new(root.join("usr/bin/tasksnap")).args(&args));
    failed_saying(&o, 3, "not a tasksnap store", &format!("tasksnap {args:?}"));
}

/// The serve unit's command line, and its options known to the installed binary.
fn the_serve_unit_takes_this_builds_options(root: &Path) {
    let serve = std::fs::read_to_string(root.join("lib/systemd/system/tasksnap-serve.service"))
        .expect("serve unit");
    let exec = one(&settings(&serve), "ExecStart", "serve");
    assert_eq!(
        exec,
        "/usr/bin/tasksnap serve --listen 127.0.0.1:8275 --interval 15"
    );
    let h = text(&ok(Command::new(root.join("usr/bin/tasksnap")).args(["serve", "--help"])).stdout);
    for opt in ["--listen", "--interval"] {
        assert!(h.contains(opt), "serve --help lacks {opt}:\n{h}");
    }
}

/// The man page: the repository's, rendered by groff and man without a warning, naming
/// every command.
fn the_man_page_renders_without_a_warning(root: &Path) {
    let page = root.join("usr/share/man/man1/tasksnap.1.gz");
    let source = std::fs::read_to_string(top().join("packaging/tasksnap.1")).expect("man src");
    assert_eq!(gunzip(&page), source);
    let groff = ok(Command::new("sh")
        .arg("-c")
        .arg("gzip -dc \"$1\" | groff -man -ww -z")
        .arg("sh")
        .arg(&page));
    assert!(groff.stderr.is_empty(), "groff: {}", text(&groff.stderr));
    let man = ok(Command::new("man")
        .arg("-l")
        .arg(&page)
        // Not a terminal: no pager, no overstrike formatting.
        .env("MANWIDTH", "80")
        .env("LC_ALL", "C.UTF-8")
        .env_remove("MANPAGER")
        .env_remove("PAGER")
        .env_remove("MAN_KEEP_FORMATTING"));
    assert!(man.stderr.is_empty(), "man -l: {}", text(&man.stderr));
    let rendered = text(&man.stdout);
    for want in [
        "tasksnap ps",
        "tasksnap top",
        "tasksnap states",
        "tasksnap record",
        "tasksnap dump",
        "tasksnap serve",
        "tasksnap pin",
        "tasksnap doctor",
        "tasksnap bench",
        "EXIT STATUS",
        "127.0.0.1:8275",
        "SEE ALSO",
    ] {
        assert!(rendered.contains(want), "man page lacks {want}");
    }
}

/// Removal takes every file away; purge forgets the package.
fn removal_takes_every_file_away(root: &Path, expected: &BTreeSet<String>) {
    ok(&mut dpkg(root, &["--remove", "tasksnap"]));
    let after = files_under(root);
    for f in expected {
        assert!(!after.contains(&f[1..]), "{f} left after removal");
    }
    assert!(!root.join("usr").exists(), "/usr left behind: {after:?}");
    assert!(!root.join("lib").exists(), "/lib left behind: {after:?}");
    ok(&mut dpkg(root, &["--purge", "tasksnap"]));
    let gone = run(&mut dpkg(root, &["--status", "tasksnap"]));
    assert!(!gone.status.success(), "still known after purge");
}

#[test]
fn build_deb_refuses_a_binary_of_another_version() {
    if !have("dpkg-deb") || !have("dpkg") {
        assert!(
            !std::env::var("TASKSNAP_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1"),
            "dpkg-deb missing"
        );
        eprintln!("SKIP: dpkg-deb not found");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let fake = tmp.path().join("tasksnap");
    std::fs::write(&fake, "#!/bin/sh\necho 'tasksnap 0.0.0-other'\n").expect("fake");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let o = run(Command::new(top().join("packaging/deb/build-deb"))
        .arg(&fake)
        .arg(tmp.path().join("out")));
    assert!(!o.status.success(), "a stale binary was packaged");
    assert!(
        text(&o.stderr).contains(&format!("the workspace is at {VERSION}")),
        "{}",
        text(&o.stderr)
    );
    assert!(!tmp.path().join("out").exists(), "wrote something anyway");
}

/// Runs a maintainer script with `args` and stub deb-systemd-helper, deb-systemd-invoke and
/// systemctl first on PATH; returns what the stubs were asked to do, one call per line.
fn script_calls(script: &str, args: &[&str], dpkg_root: Option<&str>) -> Vec<String> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let log = tmp.path().join("calls");
    for stub in ["deb-systemd-helper", "deb-systemd-invoke", "systemctl"] {
        let path = bin.join(stub);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{stub} $*\" >>'{}'\n", log.display()),
        )
        .expect("stub");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg(top().join("packaging/deb").join(script))
        .args(args)
        .env("PATH", path);
    match dpkg_root {
        Some(r) => cmd.env("DPKG_ROOT", r),
        None => cmd.env_remove("DPKG_ROOT"),
    };
    ok(&mut cmd);
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_maintainer_scripts_enable_nothing_and_leave_other_roots_alone() {
    let systemd = Path::new("/run/systemd/system").is_dir();
    let units = UNITS.join(" ");
    // Into another root: nothing at all.
    for (script, args) in [
        ("postinst", &["configure", ""][..]),
        ("postinst", &["configure", "0.0.9"][..]),
        ("prerm", &["remove"][..]),
        ("postrm", &["remove"][..]),
        ("postrm", &["purge"][..]),
    ] {
        let calls = script_calls(script, args, Some("/tmp/elsewhere"));
        assert!(
            calls.is_empty(),
            "{script} {args:?} with DPKG_ROOT: {calls:?}"
        );
    }
    // A first install: the units' state recorded for purge, never enabled or started.
    let calls = script_calls("postinst", &["configure", ""], None);
    let mut want: Vec<String> = UNITS
        .iter()
        .flat_map(|u| {
            [
                format!("deb-systemd-helper unmask {u}"),
                format!("deb-systemd-helper update-state {u}"),
            ]
        })
        .collect();
    if systemd {
        want.push("systemctl --system daemon-reload".into());
    }
    assert_eq!(calls, want, "postinst configure");
    assert!(
        !calls
            .iter()
            .any(|c| c.contains(" enable") || c.contains(" start")),
        "{calls:?}"
    );
    // An upgrade restarts only what runs (with systemd).
    let calls = script_calls("postinst", &["configure", "0.0.9"], None);
    assert_eq!(
        calls
            .iter()
            .any(|c| c == &format!("deb-systemd-invoke try-restart {units}")),
        systemd,
        "{calls:?}"
    );
    // Removal stops the units (with systemd), serve and record before pin; purge forgets.
    let calls = script_calls("prerm", &["remove"], None);
    let want: Vec<String> = if systemd {
        vec![
            "deb-systemd-invoke stop tasksnap-serve.service tasksnap-record.service".into(),
            "deb-systemd-invoke stop tasksnap-pin.service".into(),
        ]
    } else {
        vec![]
    };
    assert_eq!(calls, want, "prerm remove");
    assert!(script_calls("prerm", &["upgrade", "0.2.0"], None).is_empty());
    let calls = script_calls("postrm", &["purge"], None);
    for u in UNITS {
        for what in ["purge", "unmask"] {
            let c = format!("deb-systemd-helper {what} {u}");
            assert!(calls.contains(&c), "postrm purge lacks {c}: {calls:?}");
        }
    }
    let calls = script_calls("postrm", &["remove"], None);
    for u in UNITS {
        let c = format!("deb-systemd-helper mask {u}");
        assert!(calls.contains(&c), "postrm remove lacks {c}: {calls:?}");
    }
}
