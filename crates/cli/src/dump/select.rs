//! The columns a dump writes: all of its table's, or those named, in their order, checked
//! against the table and the format (a text column keeps its `_bytes` sibling; OpenMetrics
//! keeps the time and the labels).

use anyhow::bail;

use super::columns::{self, columns, Column};
use super::options::{Format, Options, What};

/// The columns `opts` asks for: all of the table's, or `opts.fields` in their order. An
/// unknown or repeated name is an error listing the valid ones.
pub fn select(opts: &Options) -> anyhow::Result<Vec<Column>> {
    let defaults = columns(opts.what);
    let om = opts.format == Format::OpenMetrics;
    if om && opts.what == What::Cgroups {
        bail!(
            "--what cgroups is written as csv, json or parquet: dump has no OpenMetrics \
             families for cgroups"
        );
    }
    let Some(fields) = &opts.fields else {
        return Ok(if om {
            defaults
                .into_iter()
                .filter(|c| c.name == "time" || c.label || c.metric.is_some())
                .collect()
        } else {
            defaults
        });
    };
    // Named, the model's other task fields can be chosen too.
    let mut all = defaults;
    all.extend(columns::more_columns(opts.what));
    let valid = |pick: &dyn Fn(&Column) -> bool| {
        all.iter()
            .filter(|c| pick(c))
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if fields.is_empty() {
        bail!(
            "no fields chosen; the fields of {} are: {}",
            opts.what.name(),
            valid(&|_| true)
        );
    }
    let mut chosen: Vec<Column> = Vec::with_capacity(fields.len());
    for name in fields {
        let Some(c) = all.iter().find(|c| c.name == *name) else {
            bail!(
                "unknown field `{name}` for --what {}; the fields are: {}",
                opts.what.name(),
                valid(&|_| true)
            );
        };
        if chosen.iter().any(|x| x.name == *name) {
            bail!("field `{name}` is listed twice");
        }
        if om && c.metric.is_none() && !c.label && c.name != "time" {
            bail!(
                "field `{name}` has no OpenMetrics series; the metric fields of {} are: {}",
                opts.what.name(),
                valid(&|c| c.metric.is_some())
            );
        }
        chosen.push(c.clone());
    }
    if !om {
        // A text column brings its `_bytes` sibling, right after it, unless chosen too:
        // no choice of columns loses the exact bytes of a name.
        let mut i = 0;
        while i < chosen.len() {
            if let Some(s) = columns::sibling(&chosen[i]) {
                if !chosen.iter().any(|x| x.name == s) {
                    if let Some(c) = all.iter().find(|c| c.name == s) {
                        chosen.insert(i + 1, c.clone());
                    }
                }
            }
            i += 1;
        }
    }
    if om {
        // Timestamps and the labels that tell series apart are not optional there.
        let required: Vec<Column> = all
            .iter()
            .filter(|c| (c.name == "time" || c.label) && !chosen.iter().any(|x| x.name == c.name))
            .cloned()
            .collect();
        chosen.splice(0..0, required);
    }
    Ok(chosen)
}
