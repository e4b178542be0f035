//! Names as the bytes they are, end to end: a process whose comm and command line are not
//! valid UTF-8 (started through a link named `x\xff`, as any user can) is recorded, dumped
//! and listed; every table-shaped output gives valid UTF-8 text and, in the `_bytes`
//! sibling, the exact bytes (hex in CSV and JSON), null for the valid names of the same
//! output. Only the process the test spawned is compared.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use tasksnap_loadgen::wait_until;

mod common;

use common::recording::record;
use common::tasksnap_ok;

/// `sleep 1000` started through `DIR/x\xff`, in its own process group, killed on drop.
struct Hostile {
    child: Child,
    link: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hostile {
    fn spawn() -> Hostile {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join(OsStr::from_bytes(b"x\xff"));
        std::os::unix::fs::symlink("/bin/sleep", &link).expect("symlink");
        let child = Command::new(&link)
            .arg("1000")
            .process_group(0)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn the hostile sleeper");
        let pid = child.id() as i32;
        wait_until("the hostile sleeper to sleep", || {
            std::fs::read(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.windows(4).any(|w| w == b") S "))
        });
        Hostile {
            child,
            link,
            _dir: dir,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its pid and the test's, as a `-p` list.
    fn and_mine(&self) -> String {
        format!("{},{}", self.pid(), std::process::id())
    }

    /// The command line as every table joins it: arguments separated by spaces.
    fn args(&self) -> Vec<u8> {
        [self.link.as_os_str().as_bytes(), b" 1000"].concat()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created (pgid = the child's pid).
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn csv_rows(bytes: &[u8]) -> Vec<HashMap<String, String>> {
    csv::Reader::from_reader(bytes)
        .deserialize()
        .map(|row| row.expect("a UTF-8 record"))
        .collect()
}

/// CSV and JSON dumps replaced invalid UTF-8 with U+FFFD and kept no exact bytes, although
/// the store has them.
#[test]
fn dump_keeps_invalid_utf8_names_exact() {
    let h = Hostile::spawn();
    let me = std::process::id().to_string();
    let pid = h.pid().to_string();
    let t = tempfile::tempdir().expect("tempdir");
    let dir = t.path().join("rec");
    let d = dir.to_str().expect("utf-8 path");
    record(&dir, "0.2", 2, &["-q"]);

    let csv = tasksnap_ok(&["dump", "--dir", d, "--format", "csv"]);
    let rows = csv_rows(&csv.stdout);
    let ours: Vec<_> = rows.iter().filter(|r| r["pid"] == pid).collect();
    assert_eq!(ours.len(), 2, "a row per sample");
    for r in &ours {
        assert_eq!(r["comm"], "x\u{fffd}");
        assert_eq!(r["comm_bytes"], hex(b"x\xff"));
        assert_eq!(r["args"], String::from_utf8_lossy(&h.args()));
        assert_eq!(r["args_bytes"], hex(&h.args()));
    }
    let test = rows
        .iter()
        .find(|r| r["pid"] == me)
        .expect("the test's own row");
    assert_eq!(test["comm_bytes"], "", "valid UTF-8: no bytes");

    let json = tasksnap_ok(&[
        "dump",
        "--dir",
        d,
        "--format",
        "json",
        "--what",
        "threads",
        "--fields",
        "pid,tid,comm",
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8(json.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    let ours: Vec<_> = lines
        .iter()
        .filter(|l| l["tid"] == serde_json::json!(h.pid()))
        .collect();
    assert_eq!(ours.len(), 2);
    for l in ours {
        assert_eq!(l["comm"], "x\u{fffd}");
        assert_eq!(l["comm_bytes"], hex(b"x\xff"), "brought along by comm: {l}");
    }
    let test = lines
        .iter()
        .find(|l| l["tid"] == serde_json::json!(std::process::id()))
        .expect("the test's own row");
    assert!(test["comm_bytes"].is_null(), "{test}");
}

/// ps JSON has `comm_bytes` and `args_bytes` on every row, hex or null (the defect: the bytes
/// as `comm_hex`, and only for invalid names).
#[test]
fn ps_json_gives_invalid_utf8_names_a_bytes_column() {
    let (h, me) = (Hostile::spawn(), std::process::id());
    let both = h.and_mine();
    let out = tasksnap_ok(&["ps", "-p", &both, "-o", "pid,comm,args", "--output", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let row = |pid: u32| {
        rows.iter()
            .find(|r| r["pid"] == serde_json::json!(pid))
            .unwrap_or_else(|| panic!("{pid} in {rows:?}"))
    };
    let r = row(h.pid() as u32);
    assert_eq!(r["comm"], "x\u{fffd}");
    assert_eq!(r["comm_bytes"], hex(b"x\xff"));
    assert_eq!(r["args_bytes"], hex(&h.args()));
    let mine = row(me);
    assert!(
        mine.get("comm_bytes").is_some_and(|v| v.is_null()),
        "{mine}"
    );
    assert!(
        mine.get("args_bytes").is_some_and(|v| v.is_null()),
        "{mine}"
    );
}

/// `states --json` gave a comm that is not UTF-8 with U+FFFD and no exact bytes.
#[test]
fn states_json_gives_invalid_utf8_names_a_bytes_column() {
    let (h, me) = (Hostile::spawn(), std::process::id());
    let both = h.and_mine();
    let out = tasksnap_ok(&["states", "-p", &both, "-i", "0.2", "-n", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let rows = v["threads"].as_array().expect("thread rows");
    let r = rows
        .iter()
        .find(|r| r["tid"] == serde_json::json!(h.pid()))
        .unwrap_or_else(|| panic!("{} in {v}", h.pid()));
    assert_eq!(r["comm"], "x\u{fffd}");
    assert_eq!(r["comm_bytes"], hex(b"x\xff"));
    let mine = rows
        .iter()
        .find(|r| r["tid"] == serde_json::json!(me))
        .unwrap_or_else(|| panic!("{me} in {v}"));
    assert!(
        mine.get("comm_bytes").is_some_and(|b| b.is_null()),
        "{mine}"
    );
}
