//! Tests of the dump writer on synthetic readings: three readings of a few processes and
//! threads with awkward command names, in every format, read back with each format's own
//! reader; the state-time sums against `interval::between`; bad input and closed pipes.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampMicrosecondType};
use arrow_array::Array;
use arrow_schema::{DataType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tasksnap_model::states::{Mode, Sample, State, ThreadTotals, NSTATES};
use tasksnap_model::{
    Backend, Base, CpuTicks, Cred, LoadAverages, Mem, Memory, Pressure, PressureLine, Reading,
    Sched, Snapshot, SnapshotStats, Stat, StatCounters, SystemFigures, Task, TaskId, TaskState,
};
use tasksnap_states::interval::{between, Rollup};

use super::columns::{self, columns};
use super::options::{Format, Options, What};
use super::write::{write, write_partitioned};

const T0: u64 = 1_700_000_000_000_000_000;
const BOOT_S: u64 = 1_699_990_000;
/// A uid with (almost surely) no name: the dump shows its digits.
const NAMELESS_UID: u32 = 54_321;
/// The odd command name of process 100.
const ODD_COMM: &[u8] = b"a,b\"q\xff";

fn id(tgid: i32, tid: i32) -> TaskId {
    TaskId {
        tgid,
        tid,
        start_time_ns: 1_000_000_000 * tid as u64,
    }
}

fn task(tgid: i32, tid: i32, comm: &[u8], uid: u32, cmdline: &[u8], k: u64) -> Task {
    let mut t = Task::new(id(tgid, tid));
    t.base = Some(Base {
        state: if k % 2 == 0 {
            TaskState::Running
        } else {
            TaskState::Sleeping
        },
        ppid: 1,
        comm: comm.iter().copied().collect(),
        kthread: cmdline.is_empty(),
        nice: -5,
        priority: 15,
        num_threads: if tgid == 100 { 2 } else { 1 },
        ..Base::default()
    });
    t.cred = Some(Cred::from_owner(uid, 0));
    t.stat = Some(Stat {
        utime_ns: 1_000_000_000 * k,
        stime_ns: 500_000_000 * k,
        minflt: 10 * k,
        rss_bytes: 1,
        ..Stat::default()
    });
    t.mem = Some(Box::new(Mem {
        vsize_bytes: 4096 * 1000,
        rss_bytes: 4096 * (10 + k),
        shared_bytes: 0,
        text_bytes: 0,
        data_bytes: 0,
        swap_bytes: None,
        locked_bytes: None,
    }));
    t.cmdline = Some(cmdline.to_vec());
    t.sched = Some(Box::new(Sched {
        on_cpu_ns: 7 * k,
        run_delay_ns: 3 * k,
        timeslices: k,
        voluntary_switches: None,
        involuntary_switches: None,
    }));
    t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
        b"0::/system.slice/x.service\n".to_vec(),
    )));
    t
}

fn totals(tgid: i32, tid: i32, comm: &str, state_ns: [u64; NSTATES], at: u64) -> ThreadTotals {
    ThreadTotals {
        id: id(tgid, tid),
        comm: comm.into(),
        state_ns,
        seen_at_ns: at,
        ..ThreadTotals::default()
    }
}

/// Reading `k` (0, 1, 2), one second apart. Thread 101 exits during the last interval: the
/// last snapshot lacks it, the last sample has its final totals.
fn reading(k: u64) -> Reading {
    let at = T0 + k * 1_000_000_000;
    let mut tasks = vec![
        task(1, 1, b"init", 0, b"/sbin/init\0splash\0", k),
        task(2, 2, b"kthreadd", 0, b"", k),
        task(100, 100, ODD_COMM, NAMELESS_UID, b"prog\0--x=a,b\0", k),
    ];
    if k < 2 {
        tasks.push(task(100, 101, b"line\nbreak", NAMELESS_UID, b"prog\0", k));
    }
    let mut sample = Sample::new(Mode::Bpf, at);
    let g = |run: u64, runq: u64, sleep: u64, disk: u64| [run, runq, sleep, disk, 0, 0, 0];
    let ts = [
        totals(
            1,
            1,
            "init",
            g(10 * k, 0, 1_000_000_000 * k - 10 * k, 0),
            at,
        ),
        totals(2, 2, "kthreadd", g(0, 0, 1_000_000_000 * k, 0), at),
        totals(
            100,
            100,
            "a,b\"q\u{fffd}",
            g(600_000_000 * k, 100_000_000 * k, 300_000_000 * k, 0),
            at,
        ),
        {
            // Thread 101: 0.2 s running and 0.8 s in D each second, with a reason.
            let mut t = totals(
                100,
                101,
                "line\nbreak",
                g(200_000_000 * k, 0, 0, 800_000_000 * k),
                at,
            );
            t.reasons = vec![(State::Disk, 7, 800_000_000 * k)];
            t.exited = k == 2;
            t
        },
    ];
    for t in ts {
        sample.threads.insert(t.id, t);
    }
    sample.reasons.insert(
        7,
        Arc::from(vec!["io_schedule".to_string(), "folio_wait".to_string()]),
    );
    Reading {
        snapshot: Snapshot {
            taken_at_unix_ns: at,
            taken_at_boottime_ns: at - BOOT_S * 1_000_000_000,
            boot_time_unix_s: BOOT_S,
            backend: Backend::Procfs,
            tasks,
            stats: SnapshotStats::default(),
        },
        states: Some(sample),
        system: SystemFigures {
            cpu: Some(CpuTicks {
                user: 100 * k,
                idle: 1000 * k,
                ..CpuTicks::default()
            }),
            per_cpu: vec![CpuTicks::default(); 4],
            counters: Some(StatCounters {
                context_switches: 5000 * k,
                ..StatCounters::default()
            }),
            memory: Some(Memory {
                total_kib: 1024,
                ..Memory::default()
            }),
            load: Some(LoadAverages {
                avg: [0.5, 0.25, 0.125],
                tasks: Some(300),
            }),
            vmstat: vec![("pgfault".into(), 42 + k), ("nr_dirty".into(), 3)],
            pressure: vec![Pressure {
                resource: "cpu".into(),
                some: Some(PressureLine {
                    avg_pct: [1.5, 1.0, 0.5],
                    total_us: 2_000_000 * k,
                }),
                full: None,
            }],
        },
        exits: Vec::new(),
        exits_dropped: 0,
        exits_missing: None,
        host: Default::default(),
        cgroups: None,
    }
}

fn readings() -> Vec<Reading> {
    (0..3).map(reading).collect()
}

fn opts(format: Format, what: What) -> Options {
    Options {
        format,
        what,
        fields: None,
    }
}

fn dump(rs: Vec<Reading>, o: &Options) -> (u64, Vec<u8>) {
    let mut out = Vec::new();
    let mut it = rs.into_iter().map(Ok);
    let n = write(&mut it, o, &mut out).expect("dump");
    (n, out)
}

fn csv_rows(bytes: &[u8]) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut r = csv::Reader::from_reader(bytes);
    let header: Vec<String> = r
        .headers()
        .expect("header")
        .iter()
        .map(str::to_string)
        .collect();
    let rows = r
        .records()
        .map(|rec| {
            let rec = rec.expect("record");
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect()
        })
        .collect();
    (header, rows)
}

#[test]
fn csv_reads_back_with_the_values() {
    let (n, out) = dump(readings(), &opts(Format::Csv, What::Processes));
    let (header, rows) = csv_rows(&out);
    assert_eq!(n, 9, "3 processes x 3 readings");
    assert_eq!(rows.len(), 9);
    assert_eq!(
        &header[..15],
        [
            "time",
            "pid",
            "ppid",
            "uid",
            "user",
            "user_bytes",
            "comm",
            "comm_bytes",
            "args",
            "args_bytes",
            "state",
            "cpu_seconds",
            "rss_bytes",
            "vsize_bytes",
            "threads"
        ]
    );
    let p100: Vec<_> = rows.iter().filter(|r| r["pid"] == "100").collect();
    assert_eq!(p100.len(), 3);
    assert_eq!(p100[0]["time"], "2023-11-14T22:13:20.000000Z");
    assert_eq!(p100[2]["time"], "2023-11-14T22:13:22.000000Z");
    assert_eq!(p100[1]["comm"], "a,b\"q\u{fffd}");
    assert_eq!(p100[1]["args"], "prog --x=a,b");
    assert_eq!(p100[1]["user"], NAMELESS_UID.to_string());
    assert_eq!(p100[1]["uid"], NAMELESS_UID.to_string());
    assert_eq!(p100[2]["cpu_seconds"].parse::<f64>().ok(), Some(3.0));
    assert_eq!(p100[2]["rss_bytes"], (4096 * 12).to_string());
    assert_eq!(p100[2]["threads"], "2");
    assert_eq!(p100[2]["start_time"], "2023-11-14T19:28:20.000000Z");
    assert_eq!(p100[0]["cgroup"], "/system.slice/x.service");
    assert_eq!(p100[0]["state"], "R");
    let init = rows.iter().find(|r| r["pid"] == "1").expect("init");
    assert_eq!(init["user"], "root");
    assert_eq!(init["args"], "/sbin/init splash");
    let kthread = rows.iter().find(|r| r["pid"] == "2").expect("kthreadd");
    assert_eq!(kthread["args"], "");
    // The quoting is RFC 4180's: the comm with a comma and a quote is quoted, quote doubled.
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("\"a,b\"\"q\u{fffd}\""), "{text}");
}

#[test]
fn csv_threads_keep_a_newline_in_a_comm() {
    let (n, out) = dump(readings(), &opts(Format::Csv, What::Threads));
    let (_, rows) = csv_rows(&out);
    // 4 tasks in the first two readings; in the last, 3 tasks and the exited thread.
    assert_eq!(n, 12);
    assert_eq!(rows.len(), 12);
    let t101: Vec<_> = rows.iter().filter(|r| r["tid"] == "101").collect();
    assert_eq!(t101.len(), 3);
    assert!(t101.iter().all(|r| r["comm"] == "line\nbreak"));
    assert_eq!(
        t101[0]["running_s"], "",
        "no interval before the first reading"
    );
    assert_eq!(t101[1]["disk_s"].parse::<f64>().ok(), Some(0.8));
    assert_eq!(t101[1]["exited"], "false");
    assert_eq!(t101[1]["top_reason"], "io_schedule <- folio_wait");
    assert_eq!(t101[1]["top_reason_state"], "disk");
    // Gone from the snapshot: only what the interval knows.
    assert_eq!(t101[2]["exited"], "true");
    assert_eq!(t101[2]["pid"], "100");
    assert_eq!(t101[2]["running_s"].parse::<f64>().ok(), Some(0.2));
    assert_eq!(t101[2]["args"], "");
    assert_eq!(t101[2]["time"], "2023-11-14T22:13:22.000000Z");
}

#[test]
fn an_empty_dump_is_a_header() {
    let (n, out) = dump(Vec::new(), &opts(Format::Csv, What::Processes));
    assert_eq!(n, 0);
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.starts_with("time,pid,ppid,uid,user,user_bytes,comm,comm_bytes,args,args_bytes,"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1);
    let (n, out) = dump(Vec::new(), &opts(Format::Json, What::Threads));
    assert_eq!((n, out.len()), (0, 0));
}

#[test]
fn json_lines_parse() {
    let (n, out) = dump(readings(), &opts(Format::Json, What::Threads));
    let text = String::from_utf8(out).expect("utf-8");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert_eq!(lines.len() as u64, n);
    let first = &lines[0];
    assert_eq!(first["time"], "2023-11-14T22:13:20.000000Z");
    assert!(first["running_s"].is_null());
    assert!(
        text.starts_with("{\"time\":\"2023-11-14T22:13:20.000000Z\",\"pid\":1,\"tid\":1,"),
        "the columns' order: {text}"
    );
    let t101 = lines
        .iter()
        .find(|l| l["tid"] == 101 && l["time"] == "2023-11-14T22:13:21.000000Z")
        .expect("thread 101");
    assert_eq!(t101["comm"], "line\nbreak");
    assert_eq!(t101["disk_s"], 0.8);
    assert_eq!(t101["uid"], NAMELESS_UID);
    let p100 = lines.iter().find(|l| l["tid"] == 100).expect("100");
    assert_eq!(p100["comm"], "a,b\"q\u{fffd}");
}

#[test]
fn fields_choose_and_order_the_columns() {
    let mut o = opts(Format::Csv, What::Processes);
    o.fields = Some(vec!["comm".into(), "pid".into()]);
    let (_, out) = dump(readings(), &o);
    let (header, rows) = csv_rows(&out);
    // A text column brings the column of its exact bytes.
    assert_eq!(header, ["comm", "comm_bytes", "pid"]);
    assert_eq!(rows[0]["pid"], "1");
    // Unless it is chosen too, where it was chosen; or chosen alone.
    o.fields = Some(vec!["pid".into(), "args_bytes".into(), "args".into()]);
    let (header, _) = csv_rows(&dump(readings(), &o).1);
    assert_eq!(header, ["pid", "args_bytes", "args"]);
    o.fields = Some(vec!["comm_bytes".into()]);
    let (header, _) = csv_rows(&dump(readings(), &o).1);
    assert_eq!(header, ["comm_bytes"]);

    o.fields = Some(vec!["pid".into(), "bogus".into()]);
    let err = write(&mut std::iter::empty(), &o, &mut Vec::new()).expect_err("unknown field");
    let msg = format!("{err:#}");
    assert!(
        msg.contains("bogus") && msg.contains("cpu_seconds, rss_bytes"),
        "{msg}"
    );

    o.fields = Some(vec!["pid".into(), "pid".into()]);
    assert!(write(&mut std::iter::empty(), &o, &mut Vec::new()).is_err());

    o.fields = Some(vec!["running_s".into()]);
    let err = write(&mut std::iter::empty(), &o, &mut Vec::new()).expect_err("thread-only");
    assert!(format!("{err:#}").contains("--what processes"));

    let mut om = opts(Format::OpenMetrics, What::Processes);
    om.fields = Some(vec!["args".into()]);
    let err = write(&mut std::iter::empty(), &om, &mut Vec::new()).expect_err("no series");
    assert!(format!("{err:#}").contains("no OpenMetrics series"));
}

fn parquet_batches(bytes: Vec<u8>) -> (arrow_schema::SchemaRef, Vec<arrow_array::RecordBatch>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dump.parquet");
    std::fs::write(&path, bytes).expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("a Parquet file");
    let schema = builder.schema().clone();
    let batches = builder
        .build()
        .expect("reader")
        .collect::<Result<Vec<_>, _>>()
        .expect("batches");
    (schema, batches)
}

#[test]
fn parquet_reads_back_with_types_and_values() {
    let (n, out) = dump(readings(), &opts(Format::Parquet, What::Threads));
    assert_eq!(&out[..4], b"PAR1");
    let (schema, batches) = parquet_batches(out);
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows as u64, n);
    assert_eq!(n, 12);
    let ty = |name: &str| {
        schema
            .field_with_name(name)
            .expect(name)
            .data_type()
            .clone()
    };
    assert_eq!(
        ty("time"),
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
    );
    assert_eq!(ty("pid"), DataType::Int64);
    assert_eq!(ty("comm"), DataType::Utf8);
    assert_eq!(ty("running_s"), DataType::Float64);
    assert_eq!(ty("exited"), DataType::Boolean);
    let b = &batches[0];
    let col = |name: &str| b.column(schema.index_of(name).expect(name)).clone();
    let time = col("time");
    let time = time.as_primitive::<TimestampMicrosecondType>();
    assert_eq!(time.value(0), (T0 / 1000) as i64);
    let tid = col("tid");
    let tid = tid.as_primitive::<Int64Type>();
    let comm = col("comm");
    let comm = comm.as_string::<i32>();
    let running = col("running_s");
    let running = running.as_primitive::<Float64Type>();
    let mut running_100 = 0.0;
    for i in 0..b.num_rows() {
        if tid.value(i) == 100 {
            assert_eq!(comm.value(i), "a,b\"q\u{fffd}");
            if running.is_valid(i) {
                running_100 += running.value(i);
            }
        }
        if tid.value(i) == 101 {
            assert_eq!(comm.value(i), "line\nbreak");
        }
    }
    assert!((running_100 - 1.2).abs() < 1e-9, "{running_100}");
    assert!(running.is_null(0), "the first reading has no interval");
}

#[test]
fn an_empty_parquet_dump_has_the_schema() {
    let (n, out) = dump(Vec::new(), &opts(Format::Parquet, What::System));
    assert_eq!(n, 0);
    let (schema, batches) = parquet_batches(out);
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    assert_eq!(schema.fields().len(), columns(What::System).len());
}

#[test]
fn system_rows_one_per_reading() {
    let (n, out) = dump(readings(), &opts(Format::Csv, What::System));
    let (_, rows) = csv_rows(&out);
    assert_eq!(n, 3);
    assert_eq!(rows[2]["cpu_user_ticks"], "200");
    assert_eq!(rows[2]["ncpus"], "4");
    assert_eq!(rows[2]["context_switches"], "10000");
    assert_eq!(rows[2]["mem_total_bytes"], "1048576");
    assert_eq!(rows[2]["load5"], "0.25");
    assert_eq!(rows[2]["tasks"], "300");
    assert_eq!(rows[2]["vmstat_pgfault"], "44");
    assert_eq!(rows[2]["vmstat_pgmajfault"], "", "not in the reading: null");
    assert_eq!(rows[2]["pressure_cpu_some_avg10"], "1.5");
    assert_eq!(rows[2]["pressure_cpu_some_total_us"], "4000000");
    assert_eq!(rows[2]["pressure_cpu_full_avg10"], "");
}

#[test]
fn thread_state_sums_equal_the_whole_interval() {
    // The dump's rows of a thread, summed over the readings, are what `states` shows from
    // the first reading to the last: the same `between`, over the whole window.
    for mode in [
        Mode::Bpf,
        Mode::Procfs {
            sample_hz: 10,
            delayacct: false,
        },
    ] {
        let mut rs = readings();
        for r in &mut rs {
            if let Some(s) = &mut r.states {
                s.mode = mode;
            }
        }
        let first = rs[0].states.clone().expect("sample");
        let last = rs[2].states.clone().expect("sample");
        let whole = between(&first, &last, Rollup::Thread);
        let (_, out) = dump(rs, &opts(Format::Json, What::Threads));
        let text = String::from_utf8(out).expect("utf-8");
        for row in &whole.rows {
            let tid = row.tid.expect("thread rows");
            let summed: f64 = text
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
                .filter(|l| l["tid"] == tid)
                .filter_map(|l| l["running_s"].as_f64())
                .sum();
            let want = row.ns[State::Running.index()] as f64 / 1e9;
            assert!(
                (summed - want).abs() < 1e-9,
                "{mode:?} tid {tid}: {summed} vs {want}"
            );
        }
    }
}

#[test]
fn openmetrics_escapes_types_once_and_ends_with_eof() {
    let (_, out) = dump(readings(), &opts(Format::OpenMetrics, What::Threads));
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.ends_with("# EOF\n"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1);
    let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE ")).collect();
    let mut unique = types.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(types.len(), unique.len(), "one TYPE line per family");
    assert!(types.contains(&"# TYPE tasksnap_thread_cpu_seconds counter"));
    assert!(types.contains(&"# TYPE tasksnap_thread_resident_memory_bytes gauge"));
    assert!(text.contains(
        "tasksnap_thread_cpu_seconds_total{pid=\"100\",tid=\"100\",comm=\"a,b\\\"q\u{fffd}\"} 1.5 1700000001.000\n"
    ), "{text}");
    assert!(text.contains("comm=\"line\\nbreak\""));
    assert!(!text.contains("prog"), "no command lines in labels");
    assert!(!text.contains("/sbin/init"));
    // State seconds are a counter from 0 at the dump's start.
    let disk: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("tasksnap_thread_state_seconds_total{pid=\"100\",tid=\"101\"")
                && l.contains("state=\"disk\"")
        })
        .collect();
    assert_eq!(disk.len(), 3, "{disk:?}");
    assert!(disk[0].ends_with("} 0 1700000000.000"), "{}", disk[0]);
    assert!(disk[1].ends_with("} 0.8 1700000001.000"), "{}", disk[1]);
    assert!(disk[2].ends_with("} 1.6 1700000002.000"), "{}", disk[2]);
    // A family's samples are together: once a family's lines end, its name does not return.
    let mut seen = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split(['{', ' ']).next().unwrap_or_default();
        if seen.last() != Some(&name) {
            assert!(!seen.contains(&name), "{name} interleaved");
            seen.push(name);
        }
    }
}

#[test]
fn openmetrics_processes_and_system() {
    let (_, out) = dump(readings(), &opts(Format::OpenMetrics, What::Processes));
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains(
        "tasksnap_process_cpu_seconds_total{pid=\"1\",user=\"root\",comm=\"init\"} 3 1700000002.000\n"
    ), "{text}");
    let (_, out) = dump(readings(), &opts(Format::OpenMetrics, What::System));
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("tasksnap_system_cpu_ticks_total{mode=\"user\"} 200 1700000002.000\n"));
    assert!(text.contains("# TYPE tasksnap_system_load1 gauge\n"));
    assert!(text.contains(
        "tasksnap_system_pressure_cpu_stalled_seconds_total{kind=\"some\"} 4 1700000002.000\n"
    ));
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn a_read_error_stops_the_dump_after_flushing() {
    for format in [
        Format::Csv,
        Format::Json,
        Format::Parquet,
        Format::OpenMetrics,
    ] {
        let mut items = readings()
            .into_iter()
            .take(2)
            .map(Ok)
            .chain(std::iter::once(Err(anyhow::anyhow!("frame 3 is corrupt"))))
            .chain(std::iter::once(Ok(reading(2))));
        let mut out = Vec::new();
        let err = write(&mut items, &opts(format, What::Processes), &mut out)
            .expect_err("the error comes back");
        let msg = format!("{err:#}");
        assert!(msg.contains("frame 3 is corrupt"), "{msg}");
        assert!(
            msg.contains("the 6 rows before it were written and flushed"),
            "{msg}"
        );
        match format {
            Format::Csv => assert_eq!(csv_rows(&out).1.len(), 6),
            Format::Json => assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 6),
            Format::Parquet => {
                let (_, batches) = parquet_batches(out);
                assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 6);
            }
            Format::OpenMetrics => {
                let text = String::from_utf8(out).expect("utf-8");
                assert!(text.contains("tasksnap_process_cpu_seconds_total"));
                assert!(!text.contains("# EOF"), "a cut exposition has no EOF");
            }
        }
    }
}

/// A pipe whose reader went away after `room` bytes.
struct ClosedPipe {
    room: usize,
}

impl Write for ClosedPipe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.room == 0 {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_closed_pipe_is_an_io_error_not_a_panic() {
    for format in [
        Format::Csv,
        Format::Json,
        Format::Parquet,
        Format::OpenMetrics,
    ] {
        for room in [0, 10, 300] {
            let many: Vec<Reading> = (0..200).map(|k| reading(k % 2)).collect();
            let mut it = many.into_iter().map(Ok);
            let err = write(
                &mut it,
                &opts(format, What::Threads),
                &mut ClosedPipe { room },
            )
            .expect_err("the pipe is closed");
            assert!(
                crate::output::is_broken_pipe(&err),
                "{format:?} {room}: {err:#}"
            );
        }
    }
}

/// Writes a Parquet dump of the synthetic readings and, when `TASKSNAP_DUCKDB_PYTHON`
/// names a Python with the `duckdb` package, runs tests/py/check_dump_duckdb.py on it (and
/// keeps a copy at `TASKSNAP_DUMP_PARQUET_KEEP` when that is set).
#[test]
fn duckdb_reads_the_parquet_dump() {
    let Ok(python) = std::env::var("TASKSNAP_DUCKDB_PYTHON") else {
        eprintln!("TASKSNAP_DUCKDB_PYTHON not set: the DuckDB check is skipped");
        return;
    };
    let (_, out) = dump(readings(), &opts(Format::Parquet, What::Threads));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("threads.parquet");
    std::fs::write(&path, &out).expect("write");
    if let Ok(keep) = std::env::var("TASKSNAP_DUMP_PARQUET_KEEP") {
        std::fs::write(keep, &out).expect("keep a copy");
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/py/check_dump_duckdb.py"
    );
    let status = std::process::Command::new(&python)
        .arg(script)
        .arg(&path)
        .args(["--pid", "100", "--tid", "101", "--expect-rows", "3"])
        .args(["--expect-state-seconds", "running=0.4,disk=1.6,sleeping=0"])
        .args(["--expect-comm", "line\nbreak"])
        .args(["--expect-comm-bytes", "null"])
        .status()
        .expect("python runs");
    assert!(status.success(), "{status}");
    // A comm that is not UTF-8: replaced in `comm`, exact in the BLOB `comm_bytes`.
    let status = std::process::Command::new(&python)
        .arg(script)
        .arg(&path)
        .args(["--pid", "100", "--tid", "100", "--expect-rows", "3"])
        .args(["--expect-comm", "a,b\"q\u{fffd}"])
        .args(["--expect-comm-bytes", "612c622271ff"])
        .status()
        .expect("python runs");
    assert!(status.success(), "{status}");
}

/// The readings, with process 100's command line and cgroup not valid UTF-8 either.
fn hostile_readings() -> Vec<Reading> {
    let mut rs = readings();
    for r in &mut rs {
        for t in r.snapshot.tasks.iter_mut().filter(|t| t.id.tid == 100) {
            t.cmdline = Some(b"prog\0\xfe\0".to_vec());
            t.cgroup = Some(Box::new(tasksnap_model::Cgroup::parse(
                b"0::/a\xfd\n".to_vec(),
            )));
        }
    }
    rs
}

/// A name's text has invalid UTF-8 replaced with U+FFFD, and its exact bytes, which the
/// store keeps, are in a `_bytes` sibling (hex in CSV and JSON, binary in Parquet), null
/// where the text is exact.
#[test]
fn dump_keeps_the_exact_bytes_of_names() {
    let (_, out) = dump(hostile_readings(), &opts(Format::Csv, What::Processes));
    let (_, rows) = csv_rows(&out);
    let p100 = rows.iter().find(|r| r["pid"] == "100").expect("100");
    assert_eq!(p100["comm"], "a,b\"q\u{fffd}");
    assert_eq!(p100["comm_bytes"], "612c622271ff");
    assert_eq!(p100["args"], "prog \u{fffd}");
    assert_eq!(p100["args_bytes"], "70726f6720fe");
    assert_eq!(p100["cgroup"], "/a\u{fffd}");
    assert_eq!(p100["cgroup_bytes"], "2f61fd");
    let init = rows.iter().find(|r| r["pid"] == "1").expect("init");
    for c in ["comm_bytes", "args_bytes", "cgroup_bytes", "user_bytes"] {
        assert_eq!(init[c], "", "{c}: valid UTF-8 has no bytes");
    }

    let (_, out) = dump(hostile_readings(), &opts(Format::Json, What::Threads));
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let t100 = lines.iter().find(|l| l["tid"] == 100).expect("100");
    assert_eq!(t100["comm"], "a,b\"q\u{fffd}");
    assert_eq!(t100["comm_bytes"], "612c622271ff");
    assert_eq!(t100["args_bytes"], "70726f6720fe");
    let t101 = lines.iter().find(|l| l["tid"] == 101).expect("101");
    assert!(t101["comm_bytes"].is_null() && t101["user_bytes"].is_null());

    let (_, out) = dump(hostile_readings(), &opts(Format::Parquet, What::Processes));
    let (schema, batches) = parquet_batches(out);
    for c in ["comm_bytes", "args_bytes", "user_bytes", "cgroup_bytes"] {
        assert_eq!(
            schema.field_with_name(c).expect(c).data_type(),
            &DataType::Binary
        );
    }
    let b = &batches[0];
    let col = |name: &str| b.column(schema.index_of(name).expect(name)).clone();
    let pid = col("pid");
    let pid = pid.as_primitive::<Int64Type>();
    let comm = col("comm_bytes");
    let comm = comm.as_binary::<i32>();
    let args = col("args_bytes");
    let args = args.as_binary::<i32>();
    let mut seen = 0;
    for i in 0..b.num_rows() {
        if pid.value(i) == 100 {
            assert_eq!(comm.value(i), ODD_COMM);
            assert_eq!(args.value(i), b"prog \xfe");
            seen += 1;
        } else {
            assert!(comm.is_null(i) && args.is_null(i));
        }
    }
    assert_eq!(seen, 3);
}

/// The model's field table reaches the dump: a field no default column shows is chosen by
/// its table name, with its value, and a bytes field brings its `_bytes` sibling; the
/// default columns are unchanged.
#[test]
fn fields_of_the_model_table_are_chosen_by_name() {
    let defaults: Vec<String> = columns(What::Processes)
        .into_iter()
        .map(|c| c.name)
        .collect();
    let more = columns::more_columns(What::Processes);
    for f in tasksnap_model::fields::FIELDS {
        let named = defaults
            .iter()
            .chain(more.iter().map(|c| &c.name))
            .any(|n| n == f.name);
        if f.group == tasksnap_model::fields::Group::Mem {
            assert!(named, "{} not choosable", f.name);
        }
    }
    let o = Options {
        fields: Some(vec![
            "pid".into(),
            "timeslices".into(),
            "egid".into(),
            "exe".into(),
        ]),
        ..opts(Format::Csv, What::Processes)
    };
    let (_, out) = dump(vec![reading(0), reading(1)], &o);
    let (header, rows) = csv_rows(&out);
    assert_eq!(header, ["pid", "timeslices", "egid", "exe", "exe_bytes"]);
    let init = rows
        .iter()
        .rev()
        .find(|r| r["pid"] == "1")
        .expect("init's row");
    assert_eq!(init["timeslices"], "1");
    assert_eq!(init["egid"], "0");
    assert_eq!(init["exe"], "", "not recorded: null");
}

/// A zombie that exited before the sample (its exit record is in the reading) but was not yet
/// reaped (the walk saw it, state Z) is one row: its exit's. A process that exited unseen is a
/// row too; the live ones keep theirs.
#[test]
fn a_zombie_with_its_exit_in_the_reading_is_one_row() {
    let mut r = reading(1);
    let zombie = r
        .snapshot
        .tasks
        .iter_mut()
        .find(|t| t.id.tgid == 2)
        .expect("pid 2");
    zombie.base.as_mut().expect("base").state = TaskState::Zombie;
    let zid = zombie.id;
    let exit = |id: TaskId, status: u32| tasksnap_model::Exit {
        id,
        comm: b"short".to_vec(),
        start_time_ns: id.start_time_ns,
        exit_time_ns: r.snapshot.taken_at_boottime_ns - 1_000,
        wait_status: status,
        utime_ns: 2_000_000_000,
        peak_rss_bytes: 8192,
        ..tasksnap_model::Exit::default()
    };
    let unseen = exit(id(900, 900), 9);
    r.exits = vec![exit(zid, 3 << 8), unseen];
    let (_, out) = dump(vec![r], &opts(Format::Csv, What::Processes));
    let (_, rows) = csv_rows(&out);
    let of = |pid: &str| rows.iter().filter(|r| r["pid"] == pid).collect::<Vec<_>>();
    assert_eq!(of("2").len(), 1, "the zombie is listed once: {rows:?}");
    assert_eq!(of("2")[0]["exit_code"], "3");
    assert_eq!(of("2")[0]["state"], "", "an exit row has no live state");
    assert_eq!(of("900").len(), 1);
    assert_eq!(of("900")[0]["exit_signal"], "9");
    assert_eq!(of("900")[0]["exit_code"], "");
    assert_eq!(of("900")[0]["peak_rss_bytes"], "8192");
    assert_eq!(of("100")[0]["peak_rss_bytes"], "", "null while alive");
    assert_eq!(of("100").len(), 1, "a live process keeps its row");
    assert_eq!(of("100")[0]["exit_time"], "");
}

/// The system row says how many processes exited and how many exit records were lost, and
/// null for both when the recorder had no exit source.
#[test]
fn system_rows_count_exits_and_drops() {
    let mut with = reading(1);
    with.exits = vec![tasksnap_model::Exit::default(); 2];
    with.exits_dropped = 5;
    let mut without = reading(2);
    without.exits_missing = Some("not root".into());
    let (_, out) = dump(vec![with, without], &opts(Format::Csv, What::System));
    let (_, rows) = csv_rows(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!((&*rows[0]["exits"], &*rows[0]["exits_dropped"]), ("2", "5"));
    assert_eq!((&*rows[1]["exits"], &*rows[1]["exits_dropped"]), ("", ""));
}

/// The readings, taken on `host` (its name, its boot id).
fn readings_on(host: &[u8], boot: &str) -> Vec<Reading> {
    let mut rs = readings();
    for r in &mut rs {
        r.host = tasksnap_model::HostIdentity {
            hostname: Some(host.to_vec()),
            boot_id: Some(boot.as_bytes().to_vec()),
        };
    }
    rs
}

/// Every row of every table says the machine and boot of its reading; a recording that did
/// not keep them (an older store) has them null, never the reader's.
#[test]
fn every_row_says_its_host_and_boot() {
    for what in [What::Processes, What::Threads, What::System] {
        let (n, out) = dump(readings_on(b"web-01", "b00t-1"), &opts(Format::Csv, what));
        let (header, rows) = csv_rows(&out);
        let tail: Vec<&str> = header
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(String::as_str)
            .collect();
        assert_eq!(tail, ["host", "host_bytes", "boot_id"], "{what:?}");
        assert_eq!(rows.len() as u64, n);
        assert!(n > 0);
        for r in &rows {
            assert_eq!(
                (
                    r["host"].as_str(),
                    r["host_bytes"].as_str(),
                    r["boot_id"].as_str()
                ),
                ("web-01", "", "b00t-1"),
                "{what:?}"
            );
        }
        let (_, out) = dump(readings(), &opts(Format::Json, what));
        let text = String::from_utf8(out).expect("utf-8");
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            assert!(v["host"].is_null() && v["boot_id"].is_null(), "{l}");
        }
    }
    // A host name that is not UTF-8: replaced in `host`, exact in `host_bytes`.
    let (_, out) = dump(
        readings_on(b"h\xff", "b"),
        &Options {
            fields: Some(vec!["host".into()]),
            ..opts(Format::Csv, What::System)
        },
    );
    let (header, rows) = csv_rows(&out);
    assert_eq!(header, ["host", "host_bytes"]);
    assert_eq!(rows[0]["host"], "h\u{fffd}");
    assert_eq!(rows[0]["host_bytes"], "68ff");
}

/// OpenMetrics: the host and boot id are labels when known, so the same pid of two hosts
/// (or two boots) is two series; unknown, they are left out (the series are as before).
#[test]
fn openmetrics_labels_series_with_host_and_boot() {
    let mut rs = readings_on(b"a", "boot-a");
    let mut b = readings_on(b"b", "boot-b");
    for r in &mut b {
        r.snapshot.taken_at_unix_ns += 10_000_000_000;
    }
    rs.extend(b);
    let (_, out) = dump(rs, &opts(Format::OpenMetrics, What::Processes));
    let text = String::from_utf8(out).expect("utf-8");
    for h in ["a", "b"] {
        let series = format!(
            "tasksnap_process_cpu_seconds_total{{pid=\"1\",user=\"root\",comm=\"init\",host=\"{h}\",boot_id=\"boot-{h}\"}} "
        );
        assert_eq!(text.matches(&series).count(), 3, "{h}: {text}");
    }
    let (_, out) = dump(
        readings_on(b"a", "boot-a"),
        &opts(Format::OpenMetrics, What::System),
    );
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains(
        "tasksnap_system_cpu_ticks_total{host=\"a\",boot_id=\"boot-a\",mode=\"user\"} 200 1700000002.000\n"
    ), "{text}");
    let (_, out) = dump(readings(), &opts(Format::OpenMetrics, What::System));
    assert!(!String::from_utf8(out).expect("utf-8").contains("host="));
}

/// `--partition`: each reading's rows in the file of its host and UTC date, a reading just
/// after midnight in the next day's; the files are whole Parquet files with every row.
#[test]
fn partitions_by_host_and_utc_date() {
    // 2023-11-14T23:59:59Z and the next two seconds.
    let midnight_ns: u64 = 1_700_006_400_000_000_000;
    let mut rs = readings_on(b"a/b", "x");
    for (i, r) in rs.iter_mut().enumerate() {
        r.snapshot.taken_at_unix_ns = midnight_ns - 1_000_000_000 + i as u64 * 1_000_000_000;
    }
    let mut other = readings();
    for r in &mut other {
        r.snapshot.taken_at_unix_ns = midnight_ns + 5_000_000_000;
    }
    rs.extend(other);
    let dir = tempfile::tempdir().expect("tempdir");
    let root = tasksnap_safefile::Dir::create_private(&dir.path().join("out"), 0o700)
        .expect("private dir");
    let mut it = rs.into_iter().map(Ok);
    let (n, files) = write_partitioned(&mut it, &opts(Format::Parquet, What::System), root)
        .expect("partitioned");
    assert_eq!(n, 6);
    let mut rel: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(dir.path().join("out"))
                .expect("under out")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    rel.sort();
    assert_eq!(
        rel,
        [
            "host=__HIVE_DEFAULT_PARTITION__/date=2023-11-15/part-0.parquet",
            "host=a%2Fb/date=2023-11-14/part-0.parquet",
            "host=a%2Fb/date=2023-11-15/part-0.parquet",
        ]
    );
    let rows = |name: &str| -> usize {
        let bytes = std::fs::read(dir.path().join("out").join(name)).expect("read");
        parquet_batches(bytes).1.iter().map(|b| b.num_rows()).sum()
    };
    assert_eq!(rows(&rel[0]), 3);
    assert_eq!(rows(&rel[1]), 1);
    assert_eq!(rows(&rel[2]), 2);
    // Other formats are refused.
    let root = tasksnap_safefile::Dir::create_private(&dir.path().join("csv"), 0o700)
        .expect("private dir");
    let err = write_partitioned(
        &mut readings().into_iter().map(Ok),
        &opts(Format::Csv, What::System),
        root,
    )
    .expect_err("csv");
    assert!(format!("{err:#}").contains("Parquet only"), "{err:#}");
}

/// More partitions than stay open: the oldest is finished (a whole file) and a partition
/// that comes back gets the next free `part-N`; every row is in exactly one file.
#[test]
fn partitions_beyond_the_open_limit_are_finished_and_continued() {
    let hosts = super::partition::MAX_OPEN + 2;
    let mut rs = Vec::new();
    for h in (0..hosts).chain([0]) {
        let mut r = readings_on(format!("h{h}").as_bytes(), "b").remove(0);
        r.snapshot.taken_at_unix_ns += rs.len() as u64;
        rs.push(r);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let root = tasksnap_safefile::Dir::create_private(&out, 0o700).expect("private dir");
    let (n, files) = write_partitioned(
        &mut rs.into_iter().map(Ok),
        &opts(Format::Parquet, What::System),
        root,
    )
    .expect("partitioned");
    assert_eq!(n as usize, hosts + 1);
    assert_eq!(files.len(), hosts + 1, "{files:?}");
    let h0: Vec<_> = files
        .iter()
        .filter(|f| f.starts_with(out.join("host=h0")))
        .map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert_eq!(h0.len(), 2, "{h0:?}");
    for name in ["part-0.parquet", "part-1.parquet"] {
        assert!(h0.contains(&Some(name.to_string())), "{h0:?}");
    }
    let rows: usize = files
        .iter()
        .map(|f| {
            let bytes = std::fs::read(f).expect("read");
            parquet_batches(bytes)
                .1
                .iter()
                .map(|b| b.num_rows())
                .sum::<usize>()
        })
        .sum();
    assert_eq!(rows, hosts + 1);
}

/// A partition directory that is not a directory of the caller's (a file, a symbolic link
/// planted in DIR) is refused, nothing is written through it, and the partitions written
/// before are whole files.
#[test]
fn a_planted_partition_entry_is_refused_and_the_others_finished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let root = tasksnap_safefile::Dir::create_private(&out, 0o700).expect("private dir");
    std::fs::write(out.join("host=b"), b"not a directory").expect("plant a file");
    std::os::unix::fs::symlink(&elsewhere, out.join("host=c")).expect("plant a link");
    for planted in ["b", "c"] {
        let mut rs = readings_on(b"a", "x");
        let mut other = readings_on(planted.as_bytes(), "x").remove(0);
        other.snapshot.taken_at_unix_ns += 10_000_000_000;
        rs.push(other);
        let err = write_partitioned(
            &mut rs.into_iter().map(Ok),
            &opts(Format::Parquet, What::System),
            root.try_clone().expect("dup"),
        )
        .expect_err("refused");
        assert!(
            format!("{err:#}").contains(&format!("host={planted}")),
            "{err:#}"
        );
    }
    assert_eq!(std::fs::read_dir(&elsewhere).expect("ls").count(), 0);
    // The host=a partitions of both runs are whole Parquet files of 3 rows.
    for n in 0..2 {
        let f = out.join(format!("host=a/date=2023-11-14/part-{n}.parquet"));
        let bytes = std::fs::read(&f).expect("read");
        let rows: usize = parquet_batches(bytes).1.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 3, "{}", f.display());
    }
}

/// Readings with a cgroups table: a v2 root, a v1 group with a quota and a name that is not
/// UTF-8, its memory limit none; the second reading's usage grown. A third reading has none.
fn cgroup_readings() -> Vec<Reading> {
    use tasksnap_model::{CgroupCounters, CgroupHierarchy, CgroupListing, Limit};
    let listing = |k: u64| {
        let mut root = CgroupCounters::new(b"/".to_vec(), CgroupHierarchy::V2);
        root.cpu_usage_ns = Some(u64::MAX - 10 + k);
        let mut g = CgroupCounters::new(
            b"/job\xff".to_vec(),
            CgroupHierarchy::V1(vec!["cpu".into(), "cpuacct".into()]),
        );
        g.cpu_usage_ns = Some(1_000 * k);
        g.cpu_quota_us = Some(Limit::At(20_000));
        g.memory_limit_bytes = Some(Limit::Unlimited);
        CgroupListing {
            cgroups: vec![root, g],
            notes: Vec::new(),
        }
    };
    let mut rs = readings();
    rs[0].cgroups = Some(listing(1));
    rs[1].cgroups = Some(listing(2));
    rs
}

#[test]
fn cgroup_rows_one_per_cgroup_per_reading_in_every_format() {
    let (n, out) = dump(cgroup_readings(), &opts(Format::Csv, What::Cgroups));
    assert_eq!(n, 4, "two cgroups in two readings, none in the third");
    let (header, rows) = csv_rows(&out);
    let model: Vec<&str> = tasksnap_model::CGROUP_FIELDS
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(
        header[..6],
        [
            "time",
            "path",
            "path_bytes",
            "hierarchy",
            "controllers",
            model[0]
        ]
    );
    for f in &model {
        assert!(header.iter().any(|h| h == f), "{f} is a column");
    }
    let g = &rows[3];
    assert_eq!(g["path"], "/job\u{fffd}");
    assert_eq!(g["path_bytes"], "2f6a6f62ff");
    assert_eq!(g["hierarchy"], "v1");
    assert_eq!(g["controllers"], "cpu,cpuacct");
    assert_eq!(g["cpu_usage_ns"], "2000");
    assert_eq!(g["cpu_quota_us"], "20000");
    assert_eq!(g["cpu_quota_us_unlimited"], "false");
    assert_eq!(g["memory_limit_bytes"], "", "none: null");
    assert_eq!(g["memory_limit_bytes_unlimited"], "true");
    assert_eq!(g["memory_current_bytes"], "", "not read: null");
    assert_eq!(rows[2]["cpu_usage_ns"], (u64::MAX - 8).to_string());
    assert_eq!(rows[2]["controllers"], "");
    assert_eq!(rows[2]["cpu_quota_us_unlimited"], "", "not read: null");

    let (_, out) = dump(cgroup_readings(), &opts(Format::Json, What::Cgroups));
    let lines: Vec<serde_json::Value> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[2]["cpu_usage_ns"], u64::MAX - 8);
    assert_eq!(lines[3]["memory_limit_bytes"], serde_json::Value::Null);
    assert_eq!(lines[3]["memory_limit_bytes_unlimited"], true);

    let (_, out) = dump(cgroup_readings(), &opts(Format::Parquet, What::Cgroups));
    let (schema, batches) = parquet_batches(out);
    let usage = schema.index_of("cpu_usage_ns").expect("usage");
    assert_eq!(schema.field(usage).data_type(), &DataType::UInt64);
    assert_eq!(
        schema
            .field_with_name("path_bytes")
            .expect("bytes")
            .data_type(),
        &DataType::Binary
    );
    let b = &batches[0];
    let col = b
        .column(usage)
        .as_primitive::<arrow_array::types::UInt64Type>();
    assert_eq!(col.value(2), u64::MAX - 8);
    assert_eq!(col.value(3), 2000);

    // Named, a limit brings its flag; OpenMetrics is refused.
    let o = Options {
        fields: Some(vec!["path".into(), "cpu_quota_us".into()]),
        ..opts(Format::Csv, What::Cgroups)
    };
    let (_, out) = dump(cgroup_readings(), &o);
    let (header, _) = csv_rows(&out);
    assert_eq!(
        header,
        [
            "path",
            "path_bytes",
            "cpu_quota_us",
            "cpu_quota_us_unlimited"
        ]
    );
    let mut none = Vec::<u8>::new();
    let err = write(
        &mut cgroup_readings().into_iter().map(Ok),
        &opts(Format::OpenMetrics, What::Cgroups),
        &mut none,
    )
    .expect_err("refused");
    assert!(err.to_string().contains("no OpenMetrics families"), "{err}");
}
