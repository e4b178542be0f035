//! The lists options take (`-p 1,2`, `-u root,bob`, `-G`, `-t pts/1`), read as procps's
//! ps/parser.c reads them (`parse_list` with `parse_pid`, `parse_uid`, `parse_gid`,
//! `parse_tty`): items split at spaces, commas and tabs; numbers as `strtoul(s, &end, 0)`
//! takes them; names looked up once; terminals found under the host's /dev.

/// strtoul(s, &end, 0) accepting the whole string: decimal, 0x hex or 0 octal.
fn strtoul(s: &str) -> Option<u64> {
    let t = s.trim_start();
    let t = t.strip_prefix('+').unwrap_or(t);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if t.len() > 1 && t.starts_with('0') {
        return u64::from_str_radix(&t[1..], 8).ok();
    }
    t.parse().ok()
}

/// The items of a list: separated by ' ', ',' or '\t'; an empty item is an error.
pub fn split_list(arg: &str) -> Result<Vec<&str>, String> {
    let items: Vec<&str> = arg.split([' ', ',', '\t']).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err("improper list".into());
    }
    Ok(items)
}

/// One process id, 1 to 2^31 - 1.
pub fn parse_pid(s: &str) -> Result<i32, String> {
    let Some(n) = strtoul(s) else {
        return Err("process ID list syntax error".into());
    };
    if !(1..=0x7fff_ffff).contains(&n) {
        return Err("process ID out of range".into());
    }
    Ok(n as i32)
}

/// A list of process ids.
pub fn pids(arg: &str) -> Result<Vec<i32>, String> {
    split_list(arg)?.into_iter().map(parse_pid).collect()
}

/// A user or group id, by number or by name (`lookup`); under `-N` a name that does not
/// exist is the id that matches nothing, and any number is taken.
fn parse_id(
    s: &str,
    negate: bool,
    lookup: fn(&str) -> Option<u32>,
    what: &str,
) -> Result<u32, String> {
    let n = match strtoul(s) {
        Some(n) => n,
        None => match lookup(s) {
            Some(id) => u64::from(id),
            None if negate => u64::from(u32::MAX),
            None => return Err(format!("{what} name does not exist")),
        },
    };
    if !negate && n > 0xffff_fffe {
        return Err(format!("{what} ID out of range"));
    }
    Ok(n as u32)
}

/// A list of user ids (numbers or names); `negate` under `-N`.
pub fn uids(arg: &str, negate: bool) -> Result<Vec<u32>, String> {
    split_list(arg)?
        .into_iter()
        .map(|s| parse_id(s, negate, crate::input::uid_by_name, "user"))
        .collect()
}

/// A list of group ids (numbers or names); `negate` under `-N`.
pub fn gids(arg: &str, negate: bool) -> Result<Vec<u32>, String> {
    split_list(arg)?
        .into_iter()
        .map(|s| parse_id(s, negate, tasksnap_sys::users::gid_by_name, "group"))
        .collect()
}

/// A list of terminals, as the device numbers a task's `tty_nr` holds: a path, or a name
/// found under the host's /dev (a fake tree's `dev/`) as procps's candidates; `-` and `?`
/// are no terminal.
pub fn ttys(arg: &str) -> Result<Vec<u32>, String> {
    use tasksnap_collect::NamedTty;
    let host = tasksnap_collect::Host::from_env();
    let mut out = Vec::new();
    for s in split_list(arg)? {
        match host.tty_named(s) {
            NamedTty::Device(rdev) => out.push(rdev),
            NamedTty::NotATerminal => return Err("list member was not a TTY".into()),
            NamedTty::Missing { .. } if s == "-" || s == "?" => out.push(0),
            NamedTty::Missing {
                in_working_dir: true,
            } => out.push(0),
            NamedTty::Missing { .. } => return Err("TTY could not be found".into()),
        }
    }
    Ok(out)
}
