//! A dump directory's Parquet files: every `*.parquet` file in `--dir` and in its
//! directories down to [`MAX_DEPTH`] levels (so one table's `--partition` layout,
//! `TABLE/host=H/date=D/part-N.parquet`, is found), in name order. A symbolic link is
//! neither followed nor opened (said on stderr), and nothing that is not a regular file is
//! opened (`tasksnap_safefile::Dir::open_read`). Each file's table is known by its columns,
//! never its name: the one of `dump`'s tables whose catalogue holds every column of the
//! file and the columns the report needs of it. A file that is not Parquet, or whose
//! columns are of no table, or of the wrong Arrow type, is an error naming it.

use std::fs::File;
use std::path::{Path, PathBuf};

use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use ::parquet::arrow::ProjectionMask;
use anyhow::Context;
use arrow_array::RecordBatch;
use tasksnap_safefile::{Dir, Kind as FileKind};

use crate::dump::What;

/// Directory levels below `--dir` that are searched.
pub const MAX_DEPTH: usize = 3;

/// Files read at most.
const MAX_FILES: usize = 100_000;

/// Rows per record batch read.
const BATCH_ROWS: usize = 8192;

/// The columns each table must have to be read as that table.
fn required(what: What) -> &'static [&'static str] {
    match what {
        What::Processes => &["time", "pid", "cpu_seconds"],
        What::Threads => &["time", "pid", "tid"],
        What::System => &["time"],
        What::Cgroups => &["time", "path"],
    }
}

/// One Parquet file of a dump.
pub struct TableFile {
    /// Its path.
    pub path: PathBuf,
    /// Its table.
    pub what: What,
    file: File,
    meta: ArrowReaderMetadata,
}

impl TableFile {
    /// Reads `path`'s footer and schema, and which table it is.
    fn open(path: PathBuf, file: File) -> anyhow::Result<TableFile> {
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
            .with_context(|| format!("cannot read {}: not a Parquet file", path.display()))?;
        let names: Vec<&str> = meta
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let what = table_of(&names).with_context(|| {
            format!(
                "{}: its columns are of none of tasksnap dump's tables (processes, threads, \
                 system, cgroups)",
                path.display()
            )
        })?;
        Ok(TableFile {
            path,
            what,
            file,
            meta,
        })
    }

    /// Whether the file has column `name`.
    pub fn has(&self, name: &str) -> bool {
        self.meta.schema().index_of(name).is_ok()
    }

    /// The file's rows, the columns `names` that it has (each of the type `dump` writes it
    /// as, else an error naming the file and the column), a batch at a time.
    pub fn batches(
        &self,
        names: &[&str],
    ) -> anyhow::Result<impl Iterator<Item = anyhow::Result<RecordBatch>> + '_> {
        let schema = self.meta.schema();
        let mut indices = Vec::new();
        for name in names {
            let Ok(i) = schema.index_of(name) else {
                continue;
            };
            let want = kind_of(self.what, name).map(crate::dump::data_type);
            let have = schema.field(i).data_type();
            if want.as_ref() != Some(have) {
                anyhow::bail!(
                    "{}: column {name} is {have}, not what tasksnap dump writes ({})",
                    self.path.display(),
                    want.map_or_else(|| "none".to_string(), |t| t.to_string())
                );
            }
            indices.push(i);
        }
        let file = self
            .file
            .try_clone()
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let mask = ProjectionMask::roots(self.meta.parquet_schema(), indices);
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone())
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(reader.map(move |b| b.map_err(|e| self.read_error(e))))
    }

    /// `e`, met reading the file's pages, naming the file (and saying when it is a codec
    /// this build has not: `dump` writes zstd, DuckDB and pyarrow snappy by default).
    fn read_error(&self, e: arrow_schema::ArrowError) -> anyhow::Error {
        let codec = e.to_string().contains("Disabled feature at compile time");
        let why = if codec {
            ": compressed with a codec tasksnap does not read (tasksnap dump writes zstd)"
        } else {
            ""
        };
        anyhow::Error::new(e).context(format!("cannot read {}{why}", self.path.display()))
    }
}

/// The type `dump` writes column `name` of table `what` as (`None`: it writes no such
/// column).
pub fn kind_of(what: What, name: &str) -> Option<crate::dump::Kind> {
    crate::dump::columns(what)
        .into_iter()
        .chain(crate::dump::more_columns(what))
        .find(|c| c.name == name)
        .map(|c| c.kind)
}

/// The table whose catalogue has every one of `names` and the columns it needs.
fn table_of(names: &[&str]) -> Option<What> {
    [What::Processes, What::Threads, What::System, What::Cgroups]
        .into_iter()
        .find(|&what| {
            required(what).iter().all(|r| names.contains(r))
                && names.iter().all(|n| kind_of(what, n).is_some())
        })
}

/// Every Parquet file of the dump at `dir` (see the module header), links and other kinds of
/// file left out with a line on stderr.
pub fn find(dir: &Path) -> anyhow::Result<Vec<TableFile>> {
    let root = Dir::open(dir)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {}", dir.display(), e.reason()))?;
    let mut out = Vec::new();
    walk(&root, 0, &mut out)?;
    Ok(out)
}

fn walk(dir: &Dir, depth: usize, out: &mut Vec<TableFile>) -> anyhow::Result<()> {
    let reason = |e: tasksnap_safefile::SafeError| {
        anyhow::anyhow!("cannot read {}: {}", e.path().display(), e.reason())
    };
    let mut names = dir.names().map_err(reason)?;
    names.sort();
    for name in names {
        let Some(meta) = dir.stat(&name).map_err(reason)? else {
            continue;
        };
        let path = dir.join(&name);
        let parquet = name.as_encoded_bytes().ends_with(b".parquet");
        match meta.kind {
            FileKind::Symlink => {
                warn!("tasksnap report: {}: a link, not followed", path.display());
            }
            FileKind::Directory if depth < MAX_DEPTH => {
                let sub = Dir::open(&path).map_err(reason)?;
                walk(&sub, depth + 1, out)?;
            }
            FileKind::Regular if parquet => {
                if out.len() >= MAX_FILES {
                    anyhow::bail!("more than {MAX_FILES} Parquet files under the directory");
                }
                let file = dir.open_read(&name).map_err(reason)?;
                out.push(TableFile::open(path, file)?);
            }
            _ if parquet => {
                warn!(
                    "tasksnap report: {}: a {}, not read",
                    path.display(),
                    meta.kind.describe()
                );
            }
            _ => {}
        }
    }
    Ok(())
}
