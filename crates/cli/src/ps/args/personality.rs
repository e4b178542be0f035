//! `PS_PERSONALITY` / `CMD_ENV`: which other ps procps-ng 4.0.2 imitates (ps/global.c
//! `set_personality`). A personality sets flags that change how a few options parse and
//! which default formats they pick; nothing else. An unknown or over-long name is not an
//! error in 4.0.2 (the message `set_personality` returns is dropped): it leaves the
//! defaults, as "unknown" does.

/// BSD `h` repeats the header instead of removing it.
pub const PER_BSD_H: u32 = 0x0002;
/// BSD `m` sorts by %MEM instead of showing threads.
pub const PER_BSD_M: u32 = 0x0004;
/// `-l` takes IRIX's columns (`sgi_rss:`, `priority`, `sgi_p`).
pub const PER_IRIX_L: u32 = 0x0008;
/// Every option is parsed as BSD, `-` or not; there is no UNIX first pass.
pub const PER_FORCE_BSD: u32 = 0x0010;
/// BSD `m` is the old Linux memory format (`OL_m`).
pub const PER_OLD_M: u32 = 0x0040;
/// BSD selection without the implied `g` (SunOS 4).
pub const PER_NO_DEFAULT_G: u32 = 0x0080;
/// `-l` shows `sgi_p` (P) instead of ADDR.
pub const PER_ZAP_ADDR: u32 = 0x0100;
/// `-f` shows `user` instead of `uid_hack`.
pub const PER_SANE_USER: u32 = 0x0200;
/// `-x` is HP-UX's long command line (`-ww` plus `-f`'s command).
pub const PER_HPUX_X: u32 = 0x0400;
/// `-x` is SVR4's `-y`.
pub const PER_SVR4_X: u32 = 0x0800;

/// What a personality changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Personality {
    /// `PER_*` flags.
    pub flags: u32,
    /// Defaults as if a BSD option had been given (`prefer_bsd_defaults`).
    pub prefer_bsd: bool,
    /// Macro names of the BSD `j`, `l`, `s`, `u`, `v` formats.
    pub bsd_j: &'static str,
    /// BSD `l`.
    pub bsd_l: &'static str,
    /// BSD `s`.
    pub bsd_s: &'static str,
    /// BSD `u`.
    pub bsd_u: &'static str,
    /// BSD `v`.
    pub bsd_v: &'static str,
    /// `-f`'s fixed format; `None`: built from the flags (generate_sysv_list).
    pub sysv_f: Option<&'static str>,
    /// `-fl`.
    pub sysv_fl: Option<&'static str>,
    /// `-j` (when set, `-j` is a format of its own rather than a modifier).
    pub sysv_j: Option<&'static str>,
    /// `-l`.
    pub sysv_l: Option<&'static str>,
}

impl Default for Personality {
    fn default() -> Personality {
        Personality {
            flags: 0,
            prefer_bsd: false,
            bsd_j: "OL_j",
            bsd_l: "OL_l",
            bsd_s: "OL_s",
            bsd_u: "OL_u",
            bsd_v: "OL_v",
            sysv_f: None,
            sysv_fl: None,
            sysv_j: None,
            sysv_l: None,
        }
    }
}

impl Personality {
    /// The personality the environment asks for, read as procps reads it.
    pub fn from_env() -> Personality {
        let var = |n: &str| std::env::var_os(n).map(|v| v.to_string_lossy().into_owned());
        Personality::from_vars(
            var("PS_PERSONALITY").as_deref(),
            var("CMD_ENV").as_deref(),
            std::env::var_os("I_WANT_A_BROKEN_PS").is_some(),
            var("_XPG").as_deref(),
        )
    }

    /// `PS_PERSONALITY` (or, when unset or empty, `CMD_ENV`); `I_WANT_A_BROKEN_PS` set at all
    /// means "old"; `_XPG` starting with 1-9 turns IRIX's `-l` back off.
    pub fn from_vars(
        ps_personality: Option<&str>,
        cmd_env: Option<&str>,
        broken: bool,
        xpg: Option<&str>,
    ) -> Personality {
        let mut name = ps_personality.filter(|s| !s.is_empty());
        if name.is_none() {
            name = cmd_env.filter(|s| !s.is_empty());
        }
        let mut name = name.unwrap_or("unknown");
        if broken {
            name = "old";
        }
        let mut p = Personality::default();
        if name.len() > 15 {
            return p;
        }
        let fb = |p: &mut Personality| {
            p.bsd_j = "FB_j";
            p.bsd_l = "FB_l";
            p.bsd_u = "FB_u";
            p.bsd_v = "FB_v";
        };
        // procps finds the name with bsearch + strcasecmp.
        match name.to_ascii_lowercase().as_str() {
            "bsd" => {
                p.flags = PER_FORCE_BSD | PER_BSD_H | PER_BSD_M;
                p.prefer_bsd = true;
                fb(&mut p);
            }
            "old" => {
                p.flags = PER_FORCE_BSD | PER_OLD_M;
                p.prefer_bsd = true;
            }
            "debian" | "gnu" => {
                p.flags = PER_OLD_M; // and PER_GOOD_o, which nothing reads
                p.prefer_bsd = true;
                p.sysv_f = Some("RD_f");
                p.sysv_j = Some("RD_j");
                p.sysv_l = Some("RD_l");
            }
            "linux" => p.flags = PER_ZAP_ADDR | PER_SANE_USER,
            "aix" => fb(&mut p),
            "tru64" | "compaq" | "digital" => {
                p.flags = PER_BSD_H;
                p.prefer_bsd = true;
                p.sysv_f = Some("F5FMT");
                p.sysv_fl = Some("FL5FMT");
                p.sysv_j = Some("JFMT");
                p.sysv_l = Some("L5FMT");
                p.bsd_j = "JFMT";
                p.bsd_l = "LFMT";
                p.bsd_s = "SFMT";
                p.bsd_u = "UFMT";
                p.bsd_v = "VFMT";
            }
            "sunos4" => {
                p.flags = PER_NO_DEFAULT_G;
                p.prefer_bsd = true;
                fb(&mut p);
            }
            "irix" | "sgi" => {
                let xpg_set = xpg
                    .and_then(|s| s.bytes().next())
                    .is_some_and(|c| (b'1'..=b'9').contains(&c));
                if !xpg_set {
                    p.flags = PER_IRIX_L;
                }
            }
            "os390" | "s390" | "390" => p.sysv_j = Some("J390"),
            "hp" | "hpux" => p.flags = PER_HPUX_X,
            "svr4" | "sysv" | "sco" => p.flags = PER_SVR4_X,
            // posix, solaris2, unix95, unix98, unix, default, unknown, and any other name.
            _ => {}
        }
        p
    }

    /// True when `flag` is set.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

#[cfg(test)]
mod tests {
    use crate::ps::args::personality::*;

    #[test]
    fn names_are_read_as_procps_reads_them() {
        let p = |a: Option<&str>, b: Option<&str>| Personality::from_vars(a, b, false, None);
        assert_eq!(p(None, None), Personality::default());
        assert!(p(Some("BSD"), None).has(PER_FORCE_BSD), "strcasecmp");
        // An empty PS_PERSONALITY falls back to CMD_ENV.
        assert!(p(Some(""), Some("sysv")).has(PER_SVR4_X));
        // PS_PERSONALITY wins over CMD_ENV.
        assert!(p(Some("hpux"), Some("sysv")).has(PER_HPUX_X));
        // Unknown and over-long names are the defaults.
        assert_eq!(p(Some("nonsense"), None), Personality::default());
        assert_eq!(p(Some("linuxlinuxlinuxl"), None), Personality::default());
        assert_eq!(p(Some("linux"), None).flags, PER_ZAP_ADDR | PER_SANE_USER);
        let old = Personality::from_vars(Some("linux"), None, true, None);
        assert_eq!(old.flags, PER_FORCE_BSD | PER_OLD_M);
        assert!(p(Some("irix"), None).has(PER_IRIX_L));
        let xpg = Personality::from_vars(Some("irix"), None, false, Some("1"));
        assert_eq!(xpg.flags, 0);
        assert_eq!(p(Some("gnu"), None).sysv_j, Some("RD_j"));
        assert_eq!(p(Some("digital"), None).bsd_v, "VFMT");
        assert_eq!(p(Some("aix"), None).bsd_u, "FB_u");
        assert_eq!(p(Some("aix"), None).bsd_s, "OL_s");
    }
}
