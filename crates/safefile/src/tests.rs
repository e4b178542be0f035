//! Unit tests: each refusal on a scratch tree, and that a victim file behind a planted link
//! is never touched.

use std::io::{Read, Write};
use std::os::unix::fs::{symlink, PermissionsExt};

use super::*;

fn scratch() -> (tempfile::TempDir, Dir) {
    let t = tempfile::tempdir().expect("tempdir");
    let dir = Dir::open_private(t.path()).expect("a fresh tempdir is private");
    (t, dir)
}

/// A file `victim` in `t` holding `text`, and a link `link` beside it pointing at it: the
/// planted link each refusal is tried on. Returns the victim's path.
fn plant_link(t: &tempfile::TempDir, text: &str, link: &str) -> PathBuf {
    let victim = t.path().join("victim");
    std::fs::write(&victim, text).expect("write");
    symlink(&victim, t.path().join(link)).expect("symlink");
    victim
}

/// True when the test runs as root, as giving a file to another user needs; otherwise it
/// says that it skipped, and why (`to_do`: what needs root).
fn root_to(to_do: &str) -> bool {
    let root = euid() == 0;
    if !root {
        eprintln!("skipped: needs root to {to_do}");
    }
    root
}

/// Makes the directory `p`, owned by nobody (uid and gid 65534).
fn nobodys_dir(p: &Path) {
    std::fs::create_dir(p).expect("mkdir");
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).expect("chown");
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn open_read_refuses_a_fifo_without_blocking() {
    let (t, dir) = scratch();
    rustix::fs::mkfifoat(&dir.fd, "seg", Mode::from_raw_mode(0o600)).expect("mkfifo");
    let e = dir.open_read("seg").expect_err("a FIFO is refused");
    assert!(
        matches!(
            e,
            SafeError::NotRegular {
                kind: Kind::Fifo,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("a FIFO"), "{e}");
    assert!(e.to_string().contains(&t.path().display().to_string()));
}

#[test]
fn open_read_refuses_links_and_directories_and_reads_files() {
    let (t, dir) = scratch();
    plant_link(&t, "secret", "link");
    std::fs::create_dir(t.path().join("sub")).expect("mkdir");
    assert!(matches!(
        dir.open_read("link"),
        Err(SafeError::Symlink { .. })
    ));
    let e = dir.open_read("sub").expect_err("a directory is refused");
    assert!(matches!(
        e,
        SafeError::NotRegular {
            kind: Kind::Directory,
            ..
        }
    ));
    // The OS error is said once.
    let missing = dir.open_read("missing").expect_err("missing");
    assert!(missing.is_not_found());
    let text = missing.to_string();
    assert_eq!(text.matches("os error").count(), 1, "{text}");
    let mut s = String::new();
    dir.open_read("victim")
        .expect("a regular file")
        .read_to_string(&mut s)
        .expect("read");
    assert_eq!(s, "secret");
}

#[test]
fn open_own_refuses_a_symlinked_lock_and_leaves_the_victim_whole() {
    let (t, dir) = scratch();
    let victim = plant_link(&t, "do not truncate", "LOCK");
    assert!(matches!(
        dir.open_own("LOCK", 0o600),
        Err(SafeError::Symlink { .. })
    ));
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "do not truncate"
    );
    // A hard link to another file is refused too.
    std::fs::remove_file(t.path().join("LOCK")).expect("rm");
    std::fs::hard_link(&victim, t.path().join("LOCK")).expect("link");
    assert!(matches!(
        dir.open_own("LOCK", 0o600),
        Err(SafeError::Linked { links: 2, .. })
    ));
    std::fs::remove_file(t.path().join("LOCK")).expect("rm");
    let mut f = dir.open_own("LOCK", 0o600).expect("a new lock");
    f.write_all(b"1\n").expect("write");
    assert!(dir.open_own("LOCK", 0o600).is_ok(), "reopened, not refused");
}

#[test]
fn create_new_refuses_an_existing_name_or_a_dangling_link() {
    let (t, dir) = scratch();
    symlink(t.path().join("nowhere"), t.path().join("dangling")).expect("symlink");
    assert!(dir.create_new("dangling", 0o600, false).is_err());
    assert!(
        !t.path().join("nowhere").exists(),
        "the link was not followed"
    );
    dir.create_new("fresh", 0o600, true).expect("new");
    assert!(dir.create_new("fresh", 0o600, true).is_err());
}

#[test]
fn replace_renames_over_a_link_and_never_writes_through_it() {
    let (t, dir) = scratch();
    let victim = plant_link(&t, "keep", "out");
    let mut p = dir.replace("out", 0o644).expect("replace");
    p.file().write_all(b"new").expect("write");
    p.commit().expect("commit");
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    let m = dir.stat("out").expect("stat").expect("there");
    assert_eq!(m.kind, Kind::Regular);
    assert_eq!(
        std::fs::read_to_string(t.path().join("out")).expect("read"),
        "new"
    );
    // Dropped uncommitted: the old contents stay and no temporary is left.
    let mut p = dir.replace("out", 0o644).expect("replace");
    p.file().write_all(b"half").expect("write");
    drop(p);
    assert_eq!(
        std::fs::read_to_string(t.path().join("out")).expect("read"),
        "new"
    );
    let mut names = dir.names().expect("names");
    names.sort();
    assert_eq!(names, vec![OsString::from("out"), OsString::from("victim")]);
}

#[test]
fn temp_names_are_recognised() {
    let t = temp_name(OsStr::new("tasksnap-store"), 3);
    assert!(is_temp_of(&t, OsStr::new("tasksnap-store")));
    assert!(!is_temp_of(
        OsStr::new("tasksnap-store"),
        OsStr::new("tasksnap-store")
    ));
    assert!(!is_temp_of(&t, OsStr::new("other")));
}

#[test]
fn open_private_refuses_a_link_a_file_and_a_group_or_other_writable_directory() {
    let t = tempfile::tempdir().expect("tempdir");
    let real = t.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    symlink(&real, t.path().join("link")).expect("symlink");
    assert!(matches!(
        Dir::open_private(&t.path().join("link")),
        Err(SafeError::Symlink { .. })
    ));
    std::fs::write(t.path().join("file"), "").expect("write");
    assert!(matches!(
        Dir::open_private(&t.path().join("file")),
        Err(SafeError::NotDirectory {
            kind: Kind::Regular,
            ..
        })
    ));
    chmod(&real, 0o770);
    let e = Dir::open_private(&real).expect_err("group-writable");
    assert!(matches!(e, SafeError::Writable { who: "group", .. }), "{e}");
    assert!(e.to_string().contains("chmod go-w"), "{e}");
    chmod(&real, 0o755);
    Dir::open_private(&real).expect("0755 is fine");
}

#[test]
fn open_private_refuses_a_directory_below_one_others_may_write() {
    let t = tempfile::tempdir().expect("tempdir");
    let open = t.path().join("open");
    std::fs::create_dir_all(open.join("store")).expect("mkdir");
    chmod(&open, 0o777);
    let e = Dir::open_private(&open.join("store")).expect_err("below a 0777 directory");
    assert!(matches!(e, SafeError::Ancestor { .. }), "{e}");
    assert!(e.to_string().contains("without the sticky bit"), "{e}");
    // Sticky, as /tmp: fine.
    chmod(&open, 0o1777);
    Dir::open_private(&open.join("store")).expect("below a sticky directory");
    // create_private makes what is missing, 0700.
    let made = Dir::create_private(&t.path().join("a/b"), 0o700).expect("create");
    assert_eq!(made.meta().expect("meta").mode, 0o700);
}

#[test]
fn open_private_refuses_a_directory_another_user_owns() {
    if !root_to("give a directory away") {
        return;
    }
    let t = tempfile::tempdir().expect("tempdir");
    let d = t.path().join("theirs");
    nobodys_dir(&d);
    let e = Dir::open_private(&d).expect_err("owned by nobody");
    assert!(
        matches!(
            e,
            SafeError::Owner {
                owner: 65534,
                expected: 0,
                ..
            }
        ),
        "{e}"
    );
    // And one below a directory another user owns.
    std::fs::create_dir(d.join("mine")).expect("mkdir");
    let e = Dir::open_private(&d.join("mine")).expect_err("below nobody's");
    assert!(matches!(e, SafeError::Ancestor { .. }), "{e}");
    assert!(e.to_string().contains("owned by uid 65534"), "{e}");
}

#[test]
fn open_output_replaces_files_streams_devices_and_refuses_links() {
    let (t, dir) = scratch();
    let victim = plant_link(&t, "keep", "link");
    assert!(matches!(
        dir.open_output("link", 0o600),
        Err(SafeError::Symlink { .. })
    ));
    std::fs::create_dir(t.path().join("sub")).expect("mkdir");
    assert!(matches!(
        dir.open_output("sub", 0o600),
        Err(SafeError::NotRegular { .. })
    ));
    // A regular file: its old contents stay until the new ones are final.
    std::fs::write(t.path().join("out"), "old").expect("write");
    let mut o = dir.open_output("out", 0o600).expect("output");
    o.file().write_all(b"new").expect("write");
    assert_eq!(
        std::fs::read_to_string(t.path().join("out")).expect("read"),
        "old"
    );
    o.finish().expect("finish");
    assert_eq!(
        std::fs::read_to_string(t.path().join("out")).expect("read"),
        "new"
    );
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "keep");
    // A character device of root's is written in place.
    let dev = Dir::open(Path::new("/dev")).expect("/dev");
    let mut o = dev.open_output("null", 0o600).expect("/dev/null");
    assert!(matches!(o, Output::Stream { .. }));
    o.file().write_all(b"x").expect("write");
    o.finish().expect("finish");
}

#[test]
fn open_output_refuses_another_users_file() {
    if !root_to("give a file away") {
        return;
    }
    let (t, dir) = scratch();
    std::fs::write(t.path().join("theirs"), "theirs").expect("write");
    std::os::unix::fs::chown(t.path().join("theirs"), Some(65534), None).expect("chown");
    assert!(matches!(
        dir.open_output("theirs", 0o600),
        Err(SafeError::Owner { owner: 65534, .. })
    ));
}

#[test]
fn split_path_names_a_file_or_nothing() {
    assert_eq!(
        split_path(Path::new("out.csv")),
        Some((PathBuf::from("."), OsString::from("out.csv")))
    );
    assert_eq!(
        split_path(Path::new("/tmp/x/out.csv")),
        Some((PathBuf::from("/tmp/x"), OsString::from("out.csv")))
    );
    for none in ["/", "..", "dir/", "a/.."] {
        assert_eq!(split_path(Path::new(none)), None, "{none}");
    }
}

#[test]
fn remove_tree_removes_links_not_what_they_point_to() {
    let (t, dir) = scratch();
    let keep = t.path().join("keep");
    std::fs::create_dir(&keep).expect("mkdir");
    std::fs::write(keep.join("file"), "x").expect("write");
    let tree = t.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).expect("mkdir");
    std::fs::write(tree.join("a/b/pin"), "").expect("write");
    symlink(&keep, tree.join("a/link")).expect("symlink");
    dir.remove_tree("tree").expect("remove");
    assert!(!tree.exists());
    assert!(keep.join("file").exists(), "the link's target is untouched");
    // A link at the top is removed itself.
    symlink(&keep, t.path().join("top")).expect("symlink");
    dir.remove_tree("top").expect("remove");
    assert!(keep.join("file").exists());
    let e = dir.remove_tree("top").expect_err("gone");
    assert_eq!(io::Error::from(e).kind(), io::ErrorKind::NotFound);
}

#[test]
fn open_regular_follows_links_to_files_and_refuses_devices() {
    let (t, _dir) = scratch();
    std::fs::write(t.path().join("conf"), "x: 1").expect("write");
    symlink(t.path().join("conf"), t.path().join("link")).expect("symlink");
    let mut s = String::new();
    open_regular(&t.path().join("link"))
        .expect("a link to a file is fine here")
        .read_to_string(&mut s)
        .expect("read");
    assert_eq!(s, "x: 1");
    let e = open_regular(Path::new("/dev/zero")).expect_err("a device");
    assert!(matches!(
        e,
        SafeError::NotRegular {
            kind: Kind::CharDevice,
            ..
        }
    ));
    assert_eq!(
        e.reason(),
        "is a character device, not a regular file; refusing to use it"
    );
}

#[test]
fn create_private_never_creates_through_another_users_link() {
    if !root_to("give a link away") {
        return;
    }
    let t = tempfile::tempdir().expect("tempdir");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    symlink(&elsewhere, shared.join("a")).expect("symlink");
    std::os::unix::fs::lchown(shared.join("a"), Some(65534), Some(65534)).expect("lchown");
    let e = Dir::create_private(&shared.join("a/store"), 0o700).expect_err("refused");
    assert!(matches!(e, SafeError::Ancestor { .. }), "{e}");
    assert!(
        e.to_string().contains("symbolic link owned by uid 65534"),
        "{e}"
    );
    assert!(
        !elsewhere.join("store").exists(),
        "nothing made through the link"
    );
    // Nor in a directory another user owns.
    let theirs = t.path().join("theirs");
    nobodys_dir(&theirs);
    let e = Dir::create_private(&theirs.join("x/store"), 0o700).expect_err("refused");
    assert!(e.to_string().contains("owned by uid 65534"), "{e}");
    assert!(!theirs.join("x").exists(), "nothing made there");
    // Our own links are followed, and missing levels made.
    symlink(&elsewhere, t.path().join("mine")).expect("symlink");
    Dir::create_private(&t.path().join("mine/new/store"), 0o700).expect("made");
    assert!(elsewhere.join("new/store").is_dir());
}

#[test]
fn open_trusted_follows_only_links_of_root_or_the_caller() {
    let t = tempfile::tempdir().expect("tempdir");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    symlink(&elsewhere, t.path().join("mine")).expect("symlink");
    let d = Dir::open_trusted(&t.path().join("mine")).expect("our own link");
    assert!(d
        .same_dir(&Dir::open(&elsewhere).expect("open"))
        .expect("same"));
    assert!(matches!(
        Dir::open_trusted(&t.path().join("missing")),
        Err(e) if e.is_not_found()
    ));
    if euid() != 0 {
        return;
    }
    symlink(&elsewhere, t.path().join("theirs")).expect("symlink");
    std::os::unix::fs::lchown(t.path().join("theirs"), Some(65534), None).expect("lchown");
    let e = Dir::open_trusted(&t.path().join("theirs")).expect_err("another user's link");
    assert!(
        e.to_string().contains("symbolic link owned by uid 65534"),
        "{e}"
    );
}
