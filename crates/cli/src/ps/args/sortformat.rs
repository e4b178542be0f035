//! The column and sort lists, as procps-ng 4.0's ps/sortformat.c makes them once every option
//! is read: `-o` lists (`format_parse`, with `=header` and `:width`, macros, and the AIX
//! reading of a failed list), sort lists (`--sort`, `k`, BSD `O` sort codes), the formats the
//! format options and the personality pick (`generate_sysv_list` and procps's macros, with
//! the `-j`, `-y`, `-c`, `-T`, `-L`, `-M` modifiers), `$PS_FORMAT`, and the sort keys procps
//! keeps but that sort nothing.

use std::cell::RefCell;

use super::aix;
use super::parser::*;
use super::personality::*;
use crate::ps::format;
use crate::ps::settings::{ColumnReq, SortKey};

/// procps's `errbuf` (see [`Parser::first_unknown_spec`]).
type FirstUnknown = RefCell<Option<String>>;

/// One `-o` list (procps format_parse): specs with optional `=header` and `:width`. A list
/// that fails and holds a `%` is read again as AIX descriptors; what that gives is added to
/// the columns parsed before the failing item (procps leaves those on its list).
fn format_parse(arg: &str, first_unknown: &FirstUnknown) -> Result<Vec<ColumnReq>, String> {
    match format_items(arg, first_unknown) {
        Ok(cols) => Ok(cols),
        Err((mut partial, e)) => {
            if !arg.contains('%') {
                return Err(e);
            }
            partial.extend(aix::parse(arg)?);
            Ok(partial)
        }
    }
}

/// [`format_parse`] without the AIX retry: on failure, the columns before the failing item
/// and the error.
fn format_items(
    arg: &str,
    first_unknown: &FirstUnknown,
) -> Result<Vec<ColumnReq>, (Vec<ColumnReq>, String)> {
    let err = |out: &mut Vec<ColumnReq>, e: &str| Err((std::mem::take(out), e.to_string()));
    let seps = [' ', ',', '\t', '\n'];
    // Count items; one trailing separator is allowed.
    let mut items = 0;
    let mut need = true;
    for &c in arg.as_bytes() {
        if seps.contains(&(c as char)) {
            if need {
                return err(&mut Vec::new(), "improper format list");
            }
            need = true;
        } else {
            if need {
                items += 1;
            }
            need = false;
        }
    }
    if items == 0 {
        return err(&mut Vec::new(), "empty format list");
    }
    let mut walk: &str = if need { &arg[..arg.len() - 1] } else { arg };
    let mut out = Vec::new();
    while items > 0 {
        items -= 1;
        let (item, rest) = if items > 0 {
            match walk.find(seps) {
                Some(p) => (&walk[..p], &walk[p + 1..]),
                None => (walk, ""),
            }
        } else {
            (walk, "")
        };
        walk = rest;
        let (spec, header) = match item.find('=') {
            Some(p) => (&item[..p], Some(item[p + 1..].to_string())),
            None => (item, None),
        };
        let (spec, width) = match spec.find(':') {
            Some(p) => {
                let w = &spec[p + 1..];
                let bad = "column widths must be unsigned decimal numbers";
                if w.is_empty() || w.starts_with('0') || !w.bytes().all(|c| c.is_ascii_digit()) {
                    return err(&mut out, bad);
                }
                let Ok(n) = w.parse::<usize>() else {
                    return err(&mut out, bad);
                };
                (&spec[..p], Some(n))
            }
            None => (spec, None),
        };
        if format::find(spec).is_some() {
            out.push(ColumnReq {
                name: spec.to_string(),
                header,
                width,
            });
        } else if let Some(list) = format::macro_list(spec) {
            if width.is_some() {
                return err(
                    &mut out,
                    "can not set width for a macro (multi-column) format specifier",
                );
            }
            for name in list.split(',') {
                out.push(ColumnReq {
                    name: name.to_string(),
                    header: header.clone(),
                    width: None,
                });
            }
        } else {
            let msg = first_unknown
                .borrow_mut()
                .get_or_insert_with(|| format!("unknown user-defined format specifier \"{spec}\""))
                .clone();
            return err(&mut out, &msg);
        }
    }
    Ok(out)
}

/// One sort list (`--sort`, `k`): specifiers, each after an optional `+` or `-`.
fn sort_parse(arg: &str) -> Result<Vec<SortKey>, String> {
    let seps = [' ', ',', '\t', '\n'];
    let arg = arg.strip_suffix(|c: char| seps.contains(&c)).unwrap_or(arg);
    if arg.is_empty() {
        return Err("empty sort list".into());
    }
    let mut out = Vec::new();
    for item in arg.split(seps) {
        if item.is_empty() {
            return Err("improper sort list".into());
        }
        let (name, reverse) = match item.as_bytes()[0] {
            b'-' => (&item[1..], true),
            b'+' => (&item[1..], false),
            _ => (item, false),
        };
        if format::find(name).is_none() && !ALWAYS_INERT.contains(&name) {
            return Err("unknown sort specifier".into());
        }
        out.push(SortKey {
            name: name.to_string(),
            reverse,
        });
    }
    Ok(out)
}

/// Columns of the comma-separated specifiers `list`, with their own headers and widths.
fn specs(list: &str) -> Vec<ColumnReq> {
    list.split(',')
        .map(|n| ColumnReq {
            name: n.to_string(),
            header: None,
            width: None,
        })
        .collect()
}

/// The column whose header is `header` (a modifier finds its place by header, as procps).
fn find_header(cols: &[ColumnReq], header: &str) -> Option<usize> {
    cols.iter().position(|c| {
        let h = match &c.header {
            Some(h) => h.as_str(),
            None => format::find(&c.name).map_or("", |s| s.head),
        };
        h == header
    })
}

/// Puts column `name` after the one headed `header`; false when there is none.
fn add_after(cols: &mut Vec<ColumnReq>, header: &str, name: &str) -> bool {
    match find_header(cols, header) {
        Some(i) => {
            cols.insert(i + 1, specs(name).remove(0));
            true
        }
        None => false,
    }
}

/// Takes the column headed `header` out; false when there is none.
fn delete(cols: &mut Vec<ColumnReq>, header: &str) -> bool {
    match find_header(cols, header) {
        Some(i) => {
            cols.remove(i);
            true
        }
        None => false,
    }
}

impl Parser {
    /// procps process_sf_options: the final column and sort lists.
    pub fn sort_format_lists(&mut self) -> Parsed<(Vec<ColumnReq>, Vec<SortKey>)> {
        let (cols, sort) = self.lists()?;
        // Keys procps keeps but that sort nothing (see `inert_sort`).
        let sort = sort
            .into_iter()
            .map(|k| {
                if inert_sort(&k.name, &cols, &sort_names(&self.sort_format)) {
                    SortKey {
                        name: String::new(),
                        reverse: k.reverse,
                    }
                } else {
                    k
                }
            })
            .collect();
        // Every specifier a format or macro named must be one tasksnap prints.
        if let Some(c) = cols
            .iter()
            .find(|c| !c.name.is_empty() && format::find(&c.name).is_none())
        {
            // Not a usage error: no second (BSD) reading of the options.
            return Err(Stop::Fatal(format!(
                "error: tasksnap does not implement the \"{}\" column yet\n",
                c.name
            )));
        }
        Ok((cols, sort))
    }

    /// The columns and sort keys the options give: the lists given, else `$PS_FORMAT`,
    /// else the format the format options pick.
    fn lists(&mut self) -> Parsed<(Vec<ColumnReq>, Vec<SortKey>)> {
        let (cols, sort) = self.given_lists()?;
        let (flags, modifiers) = (self.format_flags, self.format_modifiers);
        if flags == 0 && modifiers == 0 && cols.is_empty() {
            if let Some(cols) = self.ps_format() {
                return Ok((cols, sort));
            }
        }
        if !cols.is_empty() {
            if flags != 0 {
                return usage("conflicting format options");
            }
            if modifiers != 0 {
                return usage("can not use output modifiers with user-defined output");
            }
            return Ok((cols, sort));
        }
        Ok((self.standard_format()?, sort))
    }

    /// The lists of `-o`, `-O`, `o`, `O`, `--format`, `--sort` and `k`, in the order given.
    fn given_lists(&self) -> Parsed<(Vec<ColumnReq>, Vec<SortKey>)> {
        let mut cols: Vec<ColumnReq> = Vec::new();
        let mut sort: Vec<SortKey> = Vec::new();
        let mut parsed_format = false;
        let mut parsed_sort = false;
        let have_gnu_sort = self
            .sort_format
            .iter()
            .any(|(_, k)| *k == SortFormatKind::GnuSort);
        let first_unknown = &*self.first_unknown_spec;
        for (arg, kind) in &self.sort_format {
            match kind {
                SortFormatKind::UnixO | SortFormatKind::BsdO | SortFormatKind::GnuFormat => {
                    cols.extend(format_parse(arg, first_unknown)?);
                    parsed_format = true;
                }
                SortFormatKind::UnixBigO => {
                    if parsed_format {
                        return usage("option -O can not follow other format options");
                    }
                    cols.extend(specs("pid"));
                    cols.extend(format_parse(arg, first_unknown)?);
                    cols.extend(specs("state,tname,time,command"));
                    parsed_format = true;
                }
                SortFormatKind::BsdBigO => {
                    // BSD O is a short sort code list when it reads as one, else a format.
                    let as_sort = if have_gnu_sort || parsed_sort {
                        Err("multiple sort options".to_string())
                    } else {
                        verify_short_sort(arg, self.forest.is_some())
                    };
                    let why = match as_sort {
                        Ok(()) => {
                            sort.extend(short_sort_parse(arg));
                            parsed_sort = true;
                            continue;
                        }
                        Err(e) => e,
                    };
                    if parsed_format {
                        return usage("option O is neither first format nor sort order");
                    }
                    // The format's own error is not what procps reports.
                    let Ok(list) = format_parse(arg, first_unknown) else {
                        return Err(Stop::Usage(why));
                    };
                    cols.extend(specs("pid"));
                    cols.extend(list);
                    cols.extend(specs("state,tname,cputime,comm"));
                    parsed_format = true;
                }
                SortFormatKind::GnuSort | SortFormatKind::BsdM => {
                    if parsed_sort {
                        return usage("multiple sort options");
                    }
                    sort = sort_parse(arg)?;
                    parsed_sort = true;
                }
            }
        }
        Ok((cols, sort))
    }

    /// `$PS_FORMAT`'s columns when it is set and parses; a warning when it does not.
    fn ps_format(&self) -> Option<Vec<ColumnReq>> {
        let env = std::env::var("PS_FORMAT").ok().filter(|e| !e.is_empty())?;
        match format_parse(&env, &self.first_unknown_spec) {
            Ok(c) => Some(c),
            Err(e) => {
                warn!("warning: $PS_FORMAT ignored. ({e})");
                None
            }
        }
    }

    /// The format the format options pick: a macro of procps's (the personality's where it
    /// has its own) with the modifiers applied, else [`Parser::sysv_list`].
    fn standard_format(&self) -> Parsed<Vec<ColumnReq>> {
        let per = self.personality;
        let spec = match self.format_flags {
            0 => None,
            x if x == FF_UF | FF_UL => per.sysv_fl,
            FF_UF => per.sysv_f,
            FF_UL => per.sysv_l,
            FF_UJ => per.sysv_j,
            x if x == FF_UJ | FF_UL => Some("RD_lj"),
            x if x == FF_UJ | FF_UF => Some("RD_fj"),
            FF_BJ => Some(per.bsd_j),
            FF_BL => Some(per.bsd_l),
            FF_BS => Some(per.bsd_s),
            FF_BU => Some(per.bsd_u),
            FF_BV => Some(per.bsd_v),
            FF_LX => Some("OL_X"),
            FF_LM => Some("OL_m"),
            FF_FC => Some("FLASK_context"),
            _ => return usage("conflicting format options"),
        };
        let Some(spec) = spec else {
            return self.sysv_list();
        };
        let mut cols: Vec<ColumnReq> = specs(format::macro_list(spec).unwrap_or(spec));
        self.apply_modifiers(&mut cols)?;
        Ok(cols)
    }

    /// The modifiers (`-j`, `-y`, `-c`, `-T`, `-L`, `-M`) and a personality's translations
    /// of its `-l` and `-f`, applied to a macro's columns.
    fn apply_modifiers(&self, cols: &mut Vec<ColumnReq>) -> Parsed<()> {
        let fm = self.format_modifiers;
        if fm & FM_J != 0 {
            if !add_after(cols, "PPID", "pgid") && !add_after(cols, "PID", "pgid") {
                return usage("internal error: no PID or PPID for -j option");
            }
            if !add_after(cols, "PGID", "sid") {
                return usage("lost my PGID");
            }
        }
        if fm & FM_Y != 0 {
            delete(cols, "F");
            if add_after(cols, "ADDR", "rss") {
                delete(cols, "ADDR");
            }
        }
        if fm & FM_C != 0 {
            for h in ["%CPU", "CPU", "CP", "C", "NI"] {
                delete(cols, h);
            }
            if !add_after(cols, "PRI", "class") {
                return usage("internal error: no PRI for -c option");
            }
            delete(cols, "PRI");
            if !add_after(cols, "CLS", "pri") {
                return usage("lost my CLS");
            }
        }
        if self.thread_flags & TF_U_T != 0 {
            add_after(cols, "PID", "spid");
        }
        if self.thread_flags & TF_U_L != 0 {
            let _ = ["SID", "SESS", "PGID", "PGRP", "PPID", "PID"]
                .iter()
                .any(|h| add_after(cols, h, "lwp"));
            add_after(cols, "%CPU", "nlwp");
        }
        if fm & FM_M != 0 {
            cols.insert(0, specs("label").remove(0));
        }
        // A personality's own -l or -f list, translated further.
        let per = self.personality;
        if per.has(PER_ZAP_ADDR)
            && self.format_flags & FF_UL != 0
            && add_after(cols, "ADDR", "sgi_p")
        {
            delete(cols, "ADDR");
        }
        if per.has(PER_SANE_USER)
            && self.format_flags & FF_UF != 0
            && add_after(cols, "UID", "user")
        {
            delete(cols, "UID");
        }
        Ok(())
    }

    /// procps generate_sysv_list: the default UNIX formats (-f, -l, -F, -j, -L, -T, -y, -c).
    pub fn sysv_list(&self) -> Parsed<Vec<ColumnReq>> {
        let (ff, fm, tf) = (self.format_flags, self.format_modifiers, self.thread_flags);
        if fm & FM_Y != 0 && ff & FF_UL == 0 {
            return usage("modifier -y without format -l makes no sense");
        }
        let per = self.personality;
        let mut v: Vec<&str> = Vec::new();
        if fm & FM_M != 0 {
            v.push("label");
        }
        if ff & FF_UL != 0 {
            if fm & FM_Y == 0 {
                v.push("f");
            }
            v.push("s");
        }
        if ff & FF_UF != 0 {
            v.push(if per.has(PER_SANE_USER) {
                "user"
            } else {
                "uid_hack"
            });
        } else if ff & FF_UL != 0 {
            v.push("uid");
        }
        v.push("pid");
        if tf & TF_U_T != 0 {
            v.push("spid");
        }
        if ff & (FF_UF | FF_UL) != 0 {
            v.push("ppid");
        }
        if fm & FM_J != 0 {
            v.push("pgid");
            v.push("sid");
        }
        if tf & TF_U_L != 0 {
            v.push("lwp");
        }
        if fm & FM_P != 0 {
            v.push("psr");
        }
        if ff & (FF_UF | FF_UL) != 0 && fm & FM_C == 0 {
            v.push("c");
        }
        if tf & TF_U_L != 0 && ff & FF_UF != 0 {
            v.push("nlwp");
        }
        if fm & FM_C != 0 {
            v.push("class");
            v.push("pri");
        } else if ff & FF_UL != 0 {
            v.push(if per.has(PER_IRIX_L) {
                "priority"
            } else {
                "opri"
            });
            v.push("ni");
        }
        if ff & FF_UL != 0 {
            v.push(if fm & FM_Y != 0 {
                "rss"
            } else if per.has(PER_ZAP_ADDR | PER_IRIX_L) {
                "sgi_p"
            } else {
                "addr_1"
            });
        }
        if fm & FM_F != 0 || ff & FF_UL != 0 {
            v.push("sz");
        }
        // IRIX shows SZ:RSS.
        if ff & FF_UL != 0 && fm & FM_Y == 0 && per.has(PER_IRIX_L) {
            v.push(":");
            v.push("sgi_rss");
        }
        if ff & FF_UL != 0 {
            v.push("wchan");
        }
        if fm & FM_F != 0 {
            if !(ff & FF_UL != 0 && fm & FM_Y != 0) {
                v.push("rss");
            }
            if fm & FM_P == 0 {
                v.push("psr");
            }
        }
        if ff & FF_UF != 0 {
            v.push("stime");
        }
        v.push("tname");
        if self.prefer_bsd {
            if ff & FF_UL == 0 {
                v.push("stat");
            }
            v.push("bsdtime");
            v.push(if ff != 0 { "cmd" } else { "args" });
        } else {
            v.push("time");
            v.push(if ff & FF_UF != 0 { "cmd" } else { "ucmd" });
        }
        Ok(v.into_iter()
            .map(|n| match n {
                ":" => aix::text(":"),
                _ => specs(n).remove(0),
            })
            .collect())
    }
}

/// procps's `shortsort_array`: BSD `O` sort codes and the specifiers they sort by. `s`
/// (size) sorts by the virtual size in bytes, as procps's `size` does.
fn short_sort_spec(code: u8) -> Option<&'static str> {
    Some(match code {
        b'C' => "pcpu",
        b'G' => "tpgid",
        b'M' => "maj_flt",
        b'N' => "cmaj_flt",
        b'P' => "ppid",
        b'R' => "resident",
        b'S' => "share",
        b'T' => "start_time",
        b'U' => "uid",
        b'c' => "cmd",
        b'f' => "flags",
        b'g' => "pgrp",
        b'j' => "cutime",
        b'k' => "utime",
        b'm' => "min_flt",
        b'n' => "cmin_flt",
        b'o' => "session",
        b'p' => "pid",
        b'r' => "rss",
        b's' => "size",
        b't' => "tty",
        b'u' => "user",
        b'v' => "vsize",
        b'y' => "priority",
        // 'J' is cstime, which procps's table lacks; 'K' has no entry.
        _ => return None,
    })
}

/// procps verify_short_sort: whether a BSD `O` argument reads as sort codes.
fn verify_short_sort(arg: &str, forest: bool) -> Result<(), String> {
    const ALL: &[u8] = b"CGJKMNPRSTUcfgjkmnoprstuvy+-";
    let bad = || Err("bad sorting code".to_string());
    let b = arg.as_bytes();
    if !b.iter().all(|c| ALL.contains(c)) {
        return bad();
    }
    let mut seen = [false; 256];
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'+' | b'-' => {
                if matches!(b.get(i + 1), None | Some(b'+' | b'-')) {
                    return bad();
                }
            }
            _ => {
                if c == b'P' && forest {
                    return Err("PPID sort and forest output conflict".into());
                }
                if seen[c as usize] {
                    return bad();
                }
                seen[c as usize] = true;
            }
        }
    }
    Ok(())
}

/// procps short_sort_parse. Its quirks are kept: a code with no table entry (`J`, `K`) ends
/// the list there; the direction (ascending unless `-`) holds for the next code only, and
/// a code after that without its own `+` or `-` is kept with direction 0, which the
/// library refuses to sort by (an empty key here: it sorts nothing but makes the listing a
/// sorted one, as in procps).
fn short_sort_parse(arg: &str) -> Vec<SortKey> {
    let mut out = Vec::new();
    let mut dir = Some(false);
    for c in arg.bytes() {
        match c {
            b'+' => dir = Some(false),
            b'-' => dir = Some(true),
            _ => {
                let Some(spec) = short_sort_spec(c) else {
                    break;
                };
                // procps's `size` sorts by stat's vsize.
                let key = if spec == "size" { "vsize" } else { spec };
                out.push(SortKey {
                    name: if dir.is_some() {
                        key.to_string()
                    } else {
                        String::new()
                    },
                    reverse: dir.unwrap_or(false),
                });
                dir = None;
            }
        }
    }
    out
}

/// Specifiers procps sorts by without effect whatever else is asked (see [`inert_sort`]).
const ALWAYS_INERT: &[&str] = &[
    "cmaj_flt",
    "cmin_flt",
    "cutime",
    "m_resident",
    "resident",
    "share",
    "utime",
];

/// The sort specifiers named by the run's sort options, for [`inert_sort`].
fn sort_names(sort_format: &[(String, SortFormatKind)]) -> Vec<String> {
    use SortFormatKind::{BsdBigO, BsdM, GnuSort};
    sort_format
        .iter()
        .filter(|(_, k)| matches!(k, GnuSort | BsdM | BsdBigO))
        .flat_map(|(a, k)| match k {
            BsdBigO => a
                .bytes()
                .filter_map(short_sort_spec)
                .map(String::from)
                .collect(),
            _ => a
                .split([' ', ',', '\t', '\n'])
                .map(|n| n.trim_start_matches(['+', '-']).to_string())
                .collect::<Vec<_>>(),
        })
        .collect()
}

/// Whether procps 4.0.2 keeps a sort key that sorts nothing. Its library sorts only by a
/// value some column or sort key has asked it to read, and a few specifiers sort by a
/// value their own column does not read: `vsize` (it prints VmSize but sorts by stat's
/// vsize, read only for `size`, `m_size`, `trs`, `drs`, `tsiz`, `dsiz` and their aliases),
/// and the placeholders `resident`, `utime`, `cutime` (never read). `cmaj_flt`,
/// `cmin_flt` and `share` sort by nothing at all.
fn inert_sort(name: &str, cols: &[ColumnReq], sort_names: &[String]) -> bool {
    const VSIZE_READERS: &[&str] = &[
        "drs", "dsiz", "m_drs", "m_size", "m_trs", "size", "trs", "tsiz",
    ];
    match name {
        "vsize" => !cols
            .iter()
            .map(|c| c.name.as_str())
            .chain(sort_names.iter().map(String::as_str))
            .any(|n| VSIZE_READERS.contains(&n)),
        _ => ALWAYS_INERT.contains(&name),
    }
}
