//! A collection's figures as an exposition: OpenMetrics text through the official
//! `prometheus-client` crate, and the Prometheus text format (0.0.4) for scrapers that do
//! not ask for OpenMetrics (curl, `promtool check metrics`, older servers).
//!
//! prometheus-client writes OpenMetrics only, so the 0.0.4 text is derived from its output,
//! line by line, for exactly what it writes here: a counter's `# HELP`/`# TYPE` name gets
//! the `_total` its samples carry, an info metric becomes a gauge named `..._info`, and the
//! `# UNIT` and `# EOF` lines (not part of 0.0.4) go. Sample lines are the same in both.
//!
//! Metric names and their meaning are documented in docs/serve.md; a label never holds a
//! command line or environment (see [`crate::group`]).

use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use tasksnap_model::states::{Mode, State};

use crate::aggregate::{Group, System, TopProcess, View, EXIT_REASONS};
use crate::cgroups::CgroupSeries;
use crate::families::{self, Family};

/// The `Content-Type` of OpenMetrics text.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The `Content-Type` of the Prometheus text format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exporter's own figures, shown with every exposition.
#[derive(Debug, Clone, Default)]
pub struct Cost {
    /// Wall time of the last collection (reading, aggregating, encoding), seconds.
    pub collect_seconds: f64,
    /// CPU time the collections took since the exporter started, seconds.
    pub collect_cpu_seconds: f64,
    /// Collections since the exporter started.
    pub collections: u64,
    /// Collections that failed since the exporter started (the last exposition stayed up).
    pub collection_errors: u64,
    /// Connections closed to make room for a newcomer at the connection cap.
    pub connections_evicted: u64,
    /// When the last collection was taken, Unix seconds.
    pub last_collection_unix_s: f64,
    /// What reads tasks (`bpf`, `procfs`).
    pub tasks_backend: String,
    /// What reads thread states (`bpf`, `procfs`, `none`).
    pub states_backend: String,
    /// What reports exited processes (`bpf`, `taskstats`); `none` is said whenever a
    /// collection had none (`System::exits_dropped` is `None`), whatever this holds.
    pub exits_source: String,
    /// The build's version.
    pub version: String,
}

/// Both expositions of one collection.
#[derive(Debug, Clone)]
pub struct Exposition {
    /// OpenMetrics text, `# EOF` included.
    pub openmetrics: Arc<[u8]>,
    /// Prometheus text format 0.0.4.
    pub prometheus: Arc<[u8]>,
    /// Series (sample lines) in it.
    pub series: usize,
}

/// Encodes a view of the last collection, and its cgroups' series when they are collected.
pub fn expose(view: &View<'_>, cgroups: Option<Arc<CgroupSeries>>, cost: &Cost) -> Exposition {
    let families = Families {
        cgroups,
        groups: view
            .groups
            .iter()
            .map(|(n, g)| ((*n).to_string(), (*g).clone()))
            .collect(),
        folded: view.folded,
        top: view.top.to_vec(),
        system: view.system.clone(),
        cost: cost.clone(),
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(families));
    let mut om = String::with_capacity(64 * 1024);
    // Writing to a String cannot fail, and the collector's own encoding returns no error
    // of its own.
    let _ = prometheus_client::encoding::text::encode(&mut om, &registry);
    let prom = prometheus_text(&om);
    let series = om
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    Exposition {
        openmetrics: Arc::from(om.into_bytes()),
        prometheus: Arc::from(prom.into_bytes()),
        series,
    }
}

/// The Prometheus text format (0.0.4) of prometheus-client's OpenMetrics output.
pub fn prometheus_text(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    // `# HELP` comes before `# TYPE`, whose type decides the name: hold it until then.
    let mut help: Option<(&str, &str)> = None;
    for line in om.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name, text));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" => (name.to_string(), "gauge"),
                "histogram" => (name.to_string(), "histogram"),
                _ => (name.to_string(), "untyped"),
            };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Which of the two formats an `Accept` header asks for: OpenMetrics when it names
/// `application/openmetrics-text` with a quality above 0.
pub fn wants_openmetrics(accept: &str) -> bool {
    accept.split(',').any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let kind = parts.next().unwrap_or("");
        if !kind.eq_ignore_ascii_case("application/openmetrics-text") {
            return false;
        }
        !parts.any(|p| {
            p.strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f64>().ok())
                .is_some_and(|q| q <= 0.0)
        })
    })
}

#[derive(Debug)]
struct Families {
    groups: Vec<(String, Group)>,
    cgroups: Option<Arc<CgroupSeries>>,
    folded: usize,
    top: Vec<TopProcess>,
    system: System,
    cost: Cost,
}

type Labels = Vec<(&'static str, String)>;

/// One family's rows, label set and value.
type Rows = Vec<(Labels, f64)>;

/// prometheus-client's type of a family.
fn metric_type(f: &Family) -> MetricType {
    match f.kind {
        families::Type::Counter => MetricType::Counter,
        families::Type::Gauge => MetricType::Gauge,
        families::Type::Info => MetricType::Info,
    }
}

/// prometheus-client's unit of a family.
fn metric_unit(f: &Family) -> Option<Unit> {
    f.unit.map(|u| match u {
        families::Unit::Seconds => Unit::Seconds,
        families::Unit::Bytes => Unit::Bytes,
    })
}

/// Writes family `f` with `help` and `rows` (nothing when there are none).
fn family<L: EncodeLabelSet>(
    enc: &mut DescriptorEncoder,
    f: &Family,
    help: &str,
    rows: &[(L, f64)],
) -> fmt::Result {
    if rows.is_empty() {
        return Ok(());
    }
    let kind = metric_type(f);
    let (name, unit) = (f.base_name(), metric_unit(f));
    let mut m = enc.encode_descriptor(&name, help, unit.as_ref(), kind)?;
    for (labels, v) in rows {
        let mut e = m.encode_family(labels)?;
        match kind {
            MetricType::Counter => e.encode_counter::<NoLabelSet, f64, f64>(v, None)?,
            _ => e.encode_gauge(v)?,
        }
    }
    Ok(())
}

/// A family of one unlabelled value.
fn single(enc: &mut DescriptorEncoder, f: &Family, help: &str, value: f64) -> fmt::Result {
    // Encoded on the descriptor's own encoder: a family with an empty label set would be
    // written `name{} value`.
    let kind = metric_type(f);
    let (name, unit) = (f.base_name(), metric_unit(f));
    let mut m = enc.encode_descriptor(&name, help, unit.as_ref(), kind)?;
    match kind {
        MetricType::Counter => m.encode_counter::<NoLabelSet, f64, f64>(&value, None),
        _ => m.encode_gauge(&value),
    }
}

/// An info family's one sample, its labels.
fn info(enc: &mut DescriptorEncoder, f: &Family, help: &str, labels: &Labels) -> fmt::Result {
    let (name, unit) = (f.base_name(), metric_unit(f));
    let mut m = enc.encode_descriptor(&name, help, unit.as_ref(), metric_type(f))?;
    m.encode_info(labels)
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn l1(k: &'static str, v: &str) -> Labels {
    vec![(k, v.to_string())]
}

fn l2(k1: &'static str, v1: &str, k2: &'static str, v2: &str) -> Labels {
    vec![(k1, v1.to_string()), (k2, v2.to_string())]
}

/// Pushes group `n`'s row of each (`key` label value, value) of `values`, in order.
fn by(r: &mut Rows, n: &str, key: &'static str, values: &[(&str, f64)]) {
    for &(v, x) in values {
        r.push((l2("group", n, key, v), x));
    }
}

/// A per-group family: its HELP and one group's rows (the group's name, its figures).
struct GroupFamily {
    family: Family,
    help: &'static str,
    rows: fn(&str, &Group, &mut Rows),
}

/// The per-group families, in the order they are written.
static GROUP_FAMILIES: [GroupFamily; 12] = [
    GroupFamily {
        family: families::GROUP_CPU,
        help: "CPU time of the group's processes since the exporter started",
        rows: |n, g, r| {
            let (user, system) = (secs(g.total.cpu_user_ns), secs(g.total.cpu_system_ns));
            by(r, n, "mode", &[("user", user), ("system", system)]);
        },
    },
    GroupFamily {
        family: families::GROUP_STATE,
        help: "Thread time by scheduler state (sum over states: thread-seconds alive); exact \
               when tasksnap_source_info's state_seconds is exact",
        rows: |n, g, r| {
            for s in State::ALL {
                let v = secs(g.total.state_ns[s.index()]);
                r.push((l2("group", n, "state", s.name()), v));
            }
        },
    },
    GroupFamily {
        family: families::GROUP_DISK_WAIT,
        help: "Uninterruptible (D) thread time by wait reason (two innermost kernel frames); \
               the group's first reasons by name, the rest as other",
        rows: |n, g, r| {
            for (reason, ns) in &g.total.disk_reasons {
                r.push((l2("group", n, "reason", reason), secs(*ns)));
            }
            r.push((
                l2("group", n, "reason", "other"),
                secs(g.total.disk_other_ns),
            ));
        },
    },
    GroupFamily {
        family: families::GROUP_PROCESSES,
        help: "Processes in the group",
        rows: |n, g, r| r.push((l1("group", n), g.now.processes as f64)),
    },
    GroupFamily {
        family: families::GROUP_THREADS,
        help: "Threads in the group",
        rows: |n, g, r| r.push((l1("group", n), g.now.threads as f64)),
    },
    GroupFamily {
        family: families::GROUP_THREADS_IN_STATE,
        help: "The group's threads by the state they were in at the collection",
        rows: |n, g, r| {
            for s in State::ALL {
                let v = g.now.in_state[s.index()] as f64;
                r.push((l2("group", n, "state", s.name()), v));
            }
        },
    },
    GroupFamily {
        family: families::GROUP_MEMORY,
        help: "Memory of the group's processes (resident: /proc/PID/stat's rss, summed, so \
               shared pages count once per process; swap: with the BPF backend)",
        rows: |n, g, r| {
            let (res, virt) = (g.now.resident_bytes as f64, g.now.virtual_bytes as f64);
            by(r, n, "kind", &[("resident", res), ("virtual", virt)]);
            if let Some(sw) = g.now.swap_bytes {
                r.push((l2("group", n, "kind", "swap"), sw as f64));
            }
        },
    },
    GroupFamily {
        family: families::GROUP_IO,
        help: "Bytes the group's processes read from and wrote to storage since the exporter \
               started",
        rows: |n, g, r| {
            if g.now.has_io {
                let (rd, wr) = (g.total.read_bytes as f64, g.total.write_bytes as f64);
                by(r, n, "direction", &[("read", rd), ("write", wr)]);
            }
        },
    },
    GroupFamily {
        family: families::GROUP_PAGE_FAULTS,
        help: "Page faults of the group's processes since the exporter started",
        rows: |n, g, r| {
            let (mi, ma) = (g.total.minor_faults as f64, g.total.major_faults as f64);
            by(r, n, "kind", &[("minor", mi), ("major", ma)]);
        },
    },
    GroupFamily {
        family: families::GROUP_CONTEXT_SWITCHES,
        help: "Context switches of the group's threads since the exporter started",
        rows: |n, g, r| {
            if g.now.has_switches {
                let t = &g.total;
                let (v, iv) = (t.voluntary_switches as f64, t.involuntary_switches as f64);
                by(r, n, "kind", &[("voluntary", v), ("involuntary", iv)]);
            }
        },
    },
    GroupFamily {
        family: families::GROUP_EXITS,
        help: "Processes of the group that exited since the exporter started, by how they \
               ended: exit (called exit), signal (killed by one), core (killed, core dumped); a \
               reason shows once one process ended so",
        rows: |n, g, r| {
            for (reason, &count) in EXIT_REASONS.iter().zip(&g.total.exits) {
                if count > 0 {
                    r.push((l2("group", n, "reason", reason), count as f64));
                }
            }
        },
    },
    GroupFamily {
        family: families::GROUP_OLDEST_START_TIME,
        help: "Start time of the group's oldest process, Unix time",
        rows: |n, g, r| {
            if let Some(t) = g.now.oldest_start_unix_s {
                r.push((l1("group", n), t));
            }
        },
    },
];

impl Collector for Families {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        for f in &GROUP_FAMILIES {
            let mut rows = Vec::with_capacity(self.groups.len() * 2);
            for (n, g) in &self.groups {
                (f.rows)(n, g, &mut rows);
            }
            family(&mut enc, &f.family, f.help, &rows)?;
        }
        self.encode_top(&mut enc)?;
        self.encode_cgroups(&mut enc)?;
        self.encode_system(&mut enc)?;
        self.encode_cost(&mut enc)
    }
}

impl Families {
    /// The `tasksnap_cgroup_*` families, one per field of the model's cgroup table, and the
    /// count of the cgroups folded into `other` (nothing when cgroups are not collected).
    fn encode_cgroups(&self, enc: &mut DescriptorEncoder) -> fmt::Result {
        let Some(cg) = &self.cgroups else {
            return Ok(());
        };
        for (i, f) in tasksnap_model::CGROUP_FIELDS.iter().enumerate() {
            let rows: Rows = cg
                .rows
                .iter()
                .filter_map(|r| {
                    let v = r.values[i]?;
                    Some((l2("cgroup", &r.cgroup, "hierarchy", r.hierarchy), v))
                })
                .collect();
            family(enc, &families::cgroup_field(f), f.help, &rows)?;
        }
        single(
            enc,
            &families::CGROUPS_FOLDED,
            "Cgroups folded into cgroup=\"other\" by the series budget at the last collection",
            cg.folded as f64,
        )
    }

    fn encode_top(&self, enc: &mut DescriptorEncoder) -> fmt::Result {
        let pl = |p: &TopProcess| -> Labels {
            vec![("pid", p.pid.to_string()), ("comm", p.comm.clone())]
        };
        let mut cpu = Vec::new();
        let mut res = Vec::new();
        let mut thr = Vec::new();
        let mut busy = Vec::new();
        for p in &self.top {
            let mut u = pl(p);
            u.push(("mode", "user".into()));
            cpu.push((u, secs(p.cpu_user_ns)));
            let mut s = pl(p);
            s.push(("mode", "system".into()));
            cpu.push((s, secs(p.cpu_system_ns)));
            res.push((pl(p), p.resident_bytes as f64));
            thr.push((pl(p), p.threads as f64));
            busy.push((pl(p), secs(p.cpu_delta_ns)));
        }
        family(
            enc,
            &families::TASK_CPU,
            "CPU time of one of the --top-n busiest processes since it started",
            &cpu,
        )?;
        family(
            enc,
            &families::TASK_INTERVAL_CPU,
            "CPU time of one of the --top-n busiest processes in the last collection interval",
            &busy,
        )?;
        family(
            enc,
            &families::TASK_RESIDENT_MEMORY,
            "Resident memory of one of the --top-n busiest processes",
            &res,
        )?;
        family(
            enc,
            &families::TASK_THREADS,
            "Threads of one of the --top-n busiest processes",
            &thr,
        )
    }

    fn encode_system(&self, enc: &mut DescriptorEncoder) -> fmt::Result {
        let s = &self.system;
        single(
            enc,
            &families::PROCESSES,
            "Processes on the host",
            s.processes as f64,
        )?;
        single(
            enc,
            &families::THREADS,
            "Threads on the host",
            s.threads as f64,
        )?;
        if let Some(f) = s.forks {
            single(
                enc,
                &families::FORKS,
                "Processes and threads created since boot (/proc/stat processes)",
                f as f64,
            )?;
        }
        if let Some(d) = s.exits_dropped {
            single(
                enc,
                &families::EXITS_DROPPED,
                "Exit records the kernel could not send (its buffer was full): processes that \
                 exited and are missing from tasksnap_group_exits_total and their groups' \
                 counters",
                d as f64,
            )?;
        }
        let states: Vec<(Labels, f64)> = State::ALL
            .iter()
            .map(|st| (l1("state", st.name()), secs(s.state_ns[st.index()])))
            .collect();
        if s.state_mode.is_some() {
            family(
                enc,
                &families::STATE,
                "Every thread's time by scheduler state since the exporter started",
                &states,
            )?;
        }
        let now: Vec<(Labels, f64)> = State::ALL
            .iter()
            .map(|st| (l1("state", st.name()), s.in_state[st.index()] as f64))
            .collect();
        family(
            enc,
            &families::THREADS_IN_STATE,
            "Threads by the state they were in at the collection",
            &now,
        )
    }

    fn encode_cost(&self, enc: &mut DescriptorEncoder) -> fmt::Result {
        let c = &self.cost;
        single(
            enc,
            &families::COLLECT,
            "Wall time of the last collection (read, aggregate, encode)",
            c.collect_seconds,
        )?;
        single(
            enc,
            &families::COLLECT_CPU,
            "CPU time the exporter's collections took",
            c.collect_cpu_seconds,
        )?;
        single(
            enc,
            &families::COLLECTIONS,
            "Collections since the exporter started",
            c.collections as f64,
        )?;
        single(
            enc,
            &families::COLLECTION_ERRORS,
            "Collections that failed (the last exposition stayed up)",
            c.collection_errors as f64,
        )?;
        single(
            enc,
            &families::CONNECTIONS_EVICTED,
            "Connections closed to make room for a newcomer at the connection cap",
            c.connections_evicted as f64,
        )?;
        single(
            enc,
            &families::LAST_COLLECTION_TIMESTAMP,
            "When the figures were collected, Unix time",
            c.last_collection_unix_s,
        )?;
        single(
            enc,
            &families::GROUPS_FOLDED,
            "Groups folded into group=\"other\" by --max-series at the last collection",
            self.folded as f64,
        )?;
        self.encode_info(enc)
    }

    fn encode_info(&self, enc: &mut DescriptorEncoder) -> fmt::Result {
        let c = &self.cost;
        let exact = match self.system.state_mode {
            Some(Mode::Bpf) => "exact",
            Some(Mode::Procfs { .. }) => "sampled",
            None => "none",
        };
        let exits = match (&self.system.exits_dropped, c.exits_source.as_str()) {
            (Some(_), "") => "unknown",
            (Some(_), name) => name,
            (None, _) => "none",
        };
        let source: Labels = vec![
            ("tasks", c.tasks_backend.clone()),
            ("states", c.states_backend.clone()),
            ("state_seconds", exact.to_string()),
            ("exits", exits.to_string()),
        ];
        info(
            enc,
            &families::SOURCE,
            "What reads tasks, thread states and exited processes, and whether state seconds \
             are exact (exits=\"none\": processes' figures between the last collection and \
             their exit are not counted)",
            &source,
        )?;
        let build: Labels = vec![("version", c.version.clone())];
        info(enc, &families::BUILD, "The exporter's version", &build)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_choose_the_format() {
        // Prometheus 2.x's header.
        assert!(wants_openmetrics(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ));
        assert!(!wants_openmetrics("*/*"));
        assert!(!wants_openmetrics(""));
        assert!(!wants_openmetrics("text/plain"));
        assert!(!wants_openmetrics("application/openmetrics-text;q=0"));
    }

    #[test]
    fn prometheus_text_names_counters_and_infos_as_0_0_4_wants() {
        let om = "# HELP a_seconds Help.\n# TYPE a_seconds counter\n# UNIT a_seconds seconds\n\
                  a_seconds_total{x=\"1\"} 2.0\n# HELP b Info.\n# TYPE b info\nb_info{v=\"1\"} 1\n\
                  # HELP c G.\n# TYPE c gauge\nc 3\n# EOF\n";
        assert_eq!(
            prometheus_text(om),
            "# HELP a_seconds_total Help.\n# TYPE a_seconds_total counter\n\
             a_seconds_total{x=\"1\"} 2.0\n# HELP b_info Info.\n# TYPE b_info gauge\n\
             b_info{v=\"1\"} 1\n# HELP c G.\n# TYPE c gauge\nc 3\n"
        );
    }

    /// Every series the encoder writes is one the aggregator counted (so `--max-series`
    /// bounds what is written), and an unlabelled metric is written without `{}`.
    #[test]
    fn exposition_has_the_series_the_aggregator_counts() {
        use crate::aggregate::{fixed_series, Aggregator, Options};
        use tasksnap_model::{Backend, Base, Reading, Snapshot, SnapshotStats, Stat, Task, TaskId};
        const S: u64 = 1_000_000_000;
        let reading = |at: u64, cpu: u64| {
            let tasks = (1..=3)
                .map(|pid| {
                    let mut t = Task::new(TaskId {
                        tgid: pid,
                        tid: pid,
                        start_time_ns: S,
                    });
                    t.base = Some(Base {
                        comm: format!("c{pid}").into_bytes().into(),
                        num_threads: 1,
                        ..Base::default()
                    });
                    t.stat = Some(Stat {
                        utime_ns: cpu,
                        start_time_ns: S,
                        ..Stat::default()
                    });
                    t
                })
                .collect();
            Reading::of(Snapshot {
                taken_at_unix_ns: at,
                taken_at_boottime_ns: at,
                boot_time_unix_s: 1_000,
                backend: Backend::Procfs,
                tasks,
                stats: SnapshotStats::default(),
            })
        };
        let mut a = Aggregator::new(Options::default());
        a.update(&mut reading(10 * S, S));
        a.update(&mut reading(20 * S, 2 * S));
        let v = a.view();
        assert_eq!(v.groups.len(), 3);
        let counted: usize = v.groups.iter().map(|(_, g)| g.series()).sum();
        let e = expose(&v, None, &Cost::default());
        let om = std::str::from_utf8(&e.openmetrics).expect("utf-8");
        // No forks (no /proc/stat counters) and no state source (no host state seconds).
        let absent = 1 + tasksnap_model::states::NSTATES;
        assert_eq!(e.series, fixed_series(0) - absent + counted, "{om}");
        assert!(!om.contains("{}"), "{om}");
        assert!(
            om.lines().any(|l| l.starts_with("tasksnap_processes 3")),
            "{om}"
        );
    }
    /// Exits are a counter per group and reason (only the reasons seen), the exits dropped a
    /// host-wide counter, and the source info says whether there is an exit source.
    #[test]
    fn exits_are_exposed_by_reason_and_a_missing_source_is_said() {
        use crate::aggregate::{Aggregator, Options};
        use tasksnap_model::{Backend, Exit, Reading, Snapshot, SnapshotStats, TaskId};
        const S: u64 = 1_000_000_000;
        let reading = |at: u64, exits: Vec<Exit>, missing: Option<&str>| Reading {
            exits,
            exits_dropped: 2,
            exits_missing: missing.map(str::to_string),
            ..Reading::of(Snapshot {
                taken_at_unix_ns: at,
                taken_at_boottime_ns: at,
                boot_time_unix_s: 1_000,
                backend: Backend::Procfs,
                tasks: Vec::new(),
                stats: SnapshotStats::default(),
            })
        };
        let exit = |pid: i32, status: u32| Exit {
            id: TaskId {
                tgid: pid,
                tid: pid,
                start_time_ns: 11 * S,
            },
            comm: b"cron\njob".to_vec(),
            start_time_ns: 11 * S,
            wait_status: status,
            utime_ns: S,
            ..Exit::default()
        };
        let mut a = Aggregator::new(Options::default());
        a.update(&mut reading(10 * S, Vec::new(), None));
        a.update(&mut reading(
            20 * S,
            vec![exit(5, 0), exit(6, 1 << 8), exit(7, 15)],
            None,
        ));
        let taskstats = Cost {
            exits_source: "taskstats".into(),
            ..Cost::default()
        };
        let e = expose(&a.view(), None, &taskstats);
        let text = std::str::from_utf8(&e.prometheus).expect("utf-8");
        let om = std::str::from_utf8(&e.openmetrics).expect("utf-8");
        for want in [
            "# TYPE tasksnap_group_exits_total counter",
            "tasksnap_group_exits_total{group=\"cron\\njob\",reason=\"exit\"} 2",
            "tasksnap_group_exits_total{group=\"cron\\njob\",reason=\"signal\"} 1",
            "tasksnap_group_cpu_seconds_total{group=\"cron\\njob\",mode=\"user\"} 3",
            "tasksnap_exits_dropped_total 4",
            "exits=\"taskstats\"",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        assert!(!text.contains("reason=\"core\""), "{text}");
        assert!(om.contains("tasksnap_group_exits_total{"), "{om}");
        // Without an exit source: no dropped counter, and the info says none.
        a.update(&mut reading(30 * S, Vec::new(), Some("not root")));
        let e = expose(&a.view(), None, &taskstats);
        let text = std::str::from_utf8(&e.prometheus).expect("utf-8");
        assert!(!text.contains("tasksnap_exits_dropped"), "{text}");
        assert!(text.contains("exits=\"none\""), "{text}");
    }
}
