//! `dump --output DIR --partition`: Parquet files in hive-style directories,
//! `DIR/host=<host>/date=<YYYY-MM-DD>/part-<N>.parquet`, so that DuckDB, Spark or polars read
//! dumps of many hosts and days as one table (`read_parquet('DIR/*/*/*.parquet',
//! hive_partitioning = true)`) and skip the directories a query's `host` or `date` rules out.
//!
//! - A reading's rows all go to one partition: its host name (the recording's identity) and
//!   the UTC date of its time, the date the `time` column shows.
//! - The host name is hostile (`sethostname(2)` takes any bytes; a stored one is any bytes)
//!   and each distinct one is a directory of its own. Its label text (`tasksnap_export::label`:
//!   lossless, UTF-8, each byte that is not UTF-8 written `\xHH`, as serve's labels show names)
//!   has every byte but `A-Z a-z 0-9 - _ .` percent-encoded as `%XX` (controls, newline,
//!   space, `/`, `=`, `%`, `\`, NUL, every byte of a non-ASCII character), as Hive escapes
//!   partition values and DuckDB decodes them. So no name can hold a `/`, make `..`, carry a
//!   NUL or an `=`, or leave DIR; and what DuckDB decodes is valid UTF-8, which it requires
//!   (a raw byte that is not UTF-8 percent-encoded, `%FF`, makes it refuse the whole
//!   directory: "decoded value is invalid UTF8", DuckDB 1.x). A name whose encoding would pass
//!   `NAME_MAX` (only one with some 40 bytes that are not UTF-8: each is written as six) is
//!   written `~x` and the hex of its bytes instead (at most 135 bytes); a raw `~` is never
//!   part of the other form, so the two never meet. A recording that did not keep a host
//!   name goes to Hive's null partition, `host=__HIVE_DEFAULT_PARTITION__` (read back as
//!   NULL); a host named so has its first `_` encoded, and is read back as its name.
//! - Files are made through tasksnap-safefile: DIR is created if missing and opened once,
//!   refused unless it is the caller's and nobody else may write it (as a store is: a dump
//!   holds every user's command lines), and never the recording being read; each partition
//!   directory is made relative to its parent's descriptor and checked the same way; each
//!   file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, at the first free `N`, so a
//!   second dump into the same DIR (another host, another window) adds files and never
//!   replaces one.
//! - Each partition file is a whole Parquet file, finished (and synced) when the dump ends,
//!   or earlier when more than [`MAX_OPEN`] partitions are open at once (readings come in
//!   time order, so a partition rarely comes back; when it does, it gets the next `N`). When
//!   the recording fails part way the files written so far are finished, as one `--output`
//!   file would be.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;
use tasksnap_model::Reading;
use tasksnap_safefile::Dir;

use super::columns::Column;
use super::parquet_out::ParquetSink;
use super::sink::Sink;

/// Partitions open at once (each holds up to a row group of rows in memory).
pub const MAX_OPEN: usize = 8;

/// Hive's name for the partition of a null value.
pub const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// Permission bits of the directories made (the files' are [`crate::outfile::MODE`]).
const DIR_MODE: u32 = 0o700;

/// The most `part-N` names tried in one partition directory.
const MAX_PARTS: u32 = 100_000;

/// The longest file name the kernel takes (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// `host=<value>`: the host name's label text percent-encoded, or its bytes in hex when that
/// is too long (see the module header).
pub fn host_dir(hostname: Option<&[u8]>) -> String {
    let Some(name) = hostname else {
        return format!("host={NULL_PARTITION}");
    };
    let name = &name[..name.len().min(tasksnap_model::HOSTNAME_MAX_BYTES)];
    let text = tasksnap_export::label::value(name);
    let mut out = String::with_capacity(5 + text.len() * 3);
    out.push_str("host=");
    // A host named like the null partition is not null: its first `_` is encoded.
    let sentinel = text == NULL_PARTITION;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        let plain = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        if plain && !(sentinel && i == 0) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.len() > NAME_MAX {
        out.truncate(5);
        out.push_str("~x");
        super::cells::hex_into(&mut out, name);
    }
    out
}

/// `date=YYYY-MM-DD`: the UTC date of `unix_ns`.
pub fn date_dir(unix_ns: u64) -> String {
    let t = tasksnap_history::rfc3339(unix_ns);
    format!("date={}", t.get(..10).unwrap_or(&t))
}

/// One partition being written.
struct Part {
    key: (String, String),
    path: PathBuf,
    /// The file (a second descriptor of it), synced once the sink is finished.
    file: File,
    sink: ParquetSink<'static>,
}

impl Part {
    fn finish(mut self, complete: bool) -> anyhow::Result<PathBuf> {
        self.sink
            .finish(complete)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.file
            .sync_all()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.path)
    }
}

/// The [`Sink`] of a partitioned dump: each reading's rows into its partition's file.
pub struct Partitions {
    root: Dir,
    cols: Vec<Column>,
    /// Open partitions, the one written last at the end.
    open: Vec<Part>,
    /// Files finished, in the order they were finished.
    written: Vec<PathBuf>,
}

impl std::fmt::Debug for Partitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitions")
            .field("root", &self.root.path())
            .field("open", &self.open.len())
            .finish_non_exhaustive()
    }
}

impl Partitions {
    /// Partitions under `root` (opened by the caller with the checks of
    /// [`Dir::create_private`]), with the columns `cols`.
    pub fn new(root: Dir, cols: &[Column]) -> Partitions {
        Partitions {
            root,
            cols: cols.to_vec(),
            open: Vec::new(),
            written: Vec::new(),
        }
    }

    /// The files written, once [`Sink::finish`] has run.
    pub fn written(&self) -> &[PathBuf] {
        &self.written
    }

    /// Opens (creating what is missing) the partition `key` and its next free file.
    fn open_part(&self, key: (String, String)) -> anyhow::Result<Part> {
        let host = self
            .root
            .create_private_dir(&key.0, DIR_MODE)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {}", e.path().display(), e.reason()))?;
        let date = host
            .create_private_dir(&key.1, DIR_MODE)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {}", e.path().display(), e.reason()))?;
        for n in 0..MAX_PARTS {
            let name = format!("part-{n}.parquet");
            match date.create_new(&name, crate::outfile::MODE, false) {
                Ok(file) => {
                    let path = date.join(&name);
                    let copy = file
                        .try_clone()
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    let out = Box::new(BufWriter::with_capacity(1 << 20, file));
                    let sink = ParquetSink::owning(&self.cols, out)?;
                    return Ok(Part {
                        key,
                        path,
                        file: copy,
                        sink,
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(e) => {
                    anyhow::bail!(
                        "cannot create {}: {}",
                        date.join(&name).display(),
                        e.reason()
                    )
                }
            }
        }
        anyhow::bail!(
            "cannot create a file in {}: part-0 to part-{} are all taken",
            date.path().display(),
            MAX_PARTS - 1
        )
    }
}

impl Sink for Partitions {
    fn begin_reading(&mut self, r: &Reading) -> anyhow::Result<()> {
        let key = (
            host_dir(r.host.hostname.as_deref()),
            date_dir(r.snapshot.taken_at_unix_ns),
        );
        if self.open.last().is_some_and(|p| p.key == key) {
            return Ok(());
        }
        let part = match self.open.iter().position(|p| p.key == key) {
            Some(i) => self.open.remove(i),
            None => {
                if self.open.len() >= MAX_OPEN {
                    let oldest = self.open.remove(0);
                    self.written.push(oldest.finish(true)?);
                }
                match self.open_part(key) {
                    Ok(p) => p,
                    Err(e) => {
                        // The partitions written so far stay readable (finished files).
                        let _ = self.finish(false);
                        return Err(e);
                    }
                }
            }
        };
        self.open.push(part);
        Ok(())
    }

    fn row(&mut self, row: &[super::cells::Value]) -> anyhow::Result<()> {
        match self.open.last_mut() {
            Some(p) => p.sink.row(row),
            None => anyhow::bail!("a row before its reading (a bug)"),
        }
    }

    fn finish(&mut self, complete: bool) -> anyhow::Result<()> {
        let mut first_error = None;
        for p in std::mem::take(&mut self.open) {
            match p.finish(complete) {
                Ok(path) => self.written.push(path),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Err(e) = self.root.sync() {
            first_error.get_or_insert(anyhow::anyhow!(
                "cannot sync {}: {}",
                self.root.path().display(),
                e.reason()
            ));
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::dump::partition::*;

    #[test]
    fn hostile_host_names_stay_one_directory_name() {
        assert_eq!(host_dir(Some(b"web-01.example")), "host=web-01.example");
        assert_eq!(host_dir(None), "host=__HIVE_DEFAULT_PARTITION__");
        assert_eq!(host_dir(Some(b"..")), "host=..");
        assert_eq!(host_dir(Some(b"../../etc")), "host=..%2F..%2Fetc");
        assert_eq!(host_dir(Some(b"a=b\0c")), "host=a%3Db%00c");
        assert_eq!(host_dir(Some(b"%2F")), "host=%252F");
        // Bytes, not text: names differing in bytes that are not UTF-8 stay apart, and
        // DuckDB decodes each to valid UTF-8 (the label text).
        assert_eq!(host_dir(Some(b"x\xffy")), "host=x%5Cxffy");
        assert_eq!(host_dir(Some(b"x\xfey")), "host=x%5Cxfey");
        // A name that reads as the escape of another is escaped itself.
        assert_eq!(host_dir(Some(b"x\\xffy")), "host=x%5C%5Cxffy");
        assert_eq!(host_dir(Some("é".as_bytes())), "host=%C3%A9");
        assert_eq!(host_dir(Some(b"a\nb\n")), "host=a%0Ab%0A");
        // Too long encoded: the bytes in hex.
        assert_eq!(
            host_dir(Some(&[0xff; 64])),
            format!("host=~x{}", "ff".repeat(64))
        );
        assert_eq!(host_dir(Some(b"a b\x7f")), "host=a%20b%7F");
        assert_eq!(
            host_dir(Some(NULL_PARTITION.as_bytes())),
            "host=%5F_HIVE_DEFAULT_PARTITION__"
        );
        for name in [
            &b"../.."[..],
            b"/",
            b"a/b",
            b"\0",
            b"=",
            b"\n",
            &[0xff; 64],
            &[b'/'; 64],
            &[0xff; 300],
        ] {
            let d = host_dir(Some(name));
            assert!(d.starts_with("host="), "{d}");
            assert!(!d.contains('/') && !d.contains('\0'), "{d}");
            assert_eq!(d.matches('=').count(), 1, "{d}");
            // The longest host name fits NAME_MAX, whatever its bytes.
            assert!(d.len() <= 255, "{}", d.len());
        }
    }

    #[test]
    fn distinct_host_names_are_distinct_directories() {
        let mut names: Vec<Vec<u8>> = vec![b"~x78".to_vec(), b"x".to_vec(), b"\\xff".to_vec()];
        for a in [
            0u8, b'\n', b'\\', b'%', b'~', b'x', b'f', 0x7f, 0xc3, 0xa9, 0xfe, 0xff,
        ] {
            for b in [b'x', b'\\', 0xa9, 0xff] {
                names.push(vec![a, b]);
                names.push(vec![a; 50]);
            }
        }
        names.push(vec![0xff; 45]);
        names.push(vec![0xff; 46]);
        names.sort();
        names.dedup();
        let mut dirs: Vec<String> = names.iter().map(|n| host_dir(Some(n))).collect();
        assert!(dirs.iter().all(|d| d.len() <= NAME_MAX && !d.contains('/')));
        dirs.sort();
        dirs.dedup();
        assert_eq!(dirs.len(), names.len());
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(date_dir(0), "date=1970-01-01");
        // 2026-11-27T23:59:59.999Z and one ms later.
        let ns = 1_795_823_999_999_000_000;
        assert_eq!(date_dir(ns), "date=2026-11-27");
        assert_eq!(date_dir(ns + 1_000_000), "date=2026-11-28");
    }
}
