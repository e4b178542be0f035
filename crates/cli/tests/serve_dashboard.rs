//! The Grafana dashboard and the Prometheus rules shipped in packaging/ (the Debian package
//! installs them under /usr/share/tasksnap/, see package.rs):
//! - Debian's `promtool` checks the rules and runs their unit tests
//!   (packaging/prometheus/tasksnap-rules.test.yml), in which each alert fires on a synthetic
//!   series and not on a quiet one; each alert has a severity, a summary, a description and
//!   a runbook whose docs/serve.md anchor exists;
//! - every metric the dashboard and the rules read is a family of tasksnap-export's table
//!   (`families::served`) or a series the rules record, every `state` they name is a state,
//!   and a counter is only read through `rate()`/`increase()` (over `$__rate_interval`, or
//!   the time range for a table, in the dashboard), a gauge never;
//! - a real Prometheus, scraping `tasksnap serve` every second with the rules loaded, on a
//!   load this test spawns (a CPU hog, a task in D, threads, processes forked and ending),
//!   answers every panel's query and every variable's with series, with all groups and with
//!   only the load's; evaluates every rule without an error and has every recorded series;
//!   and the exporter writes no family the table lacks.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::serve::{tool, Prometheus, Server};
use common::text;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;
use tasksnap_export::families::{self, Type};
use tasksnap_loadgen::{skip_unless_root, Load};

const DASHBOARD: &str = "packaging/grafana/tasksnap.json";
const RULES: &str = "packaging/prometheus/tasksnap-rules.yml";
const RULE_TESTS: &str = "packaging/prometheus/tasksnap-rules.test.yml";

/// The rate interval Grafana would pick for a 1 s scrape (4 scrapes, and a margin).
const RATE_INTERVAL: &str = "5s";

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    let p = top().join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn dashboard() -> Value {
    serde_json::from_str(&read(DASHBOARD)).expect("the dashboard is JSON")
}

fn yaml(path: &str) -> Yaml {
    serde_yaml_ng::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The dashboard's panels, those inside collapsed rows included.
fn panels(d: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        out.push(p);
        if let Some(inner) = p["panels"].as_array() {
            out.extend(inner);
        }
    }
    out
}

/// Each panel query: the panel's title and its PromQL, with the dashboard's variables.
fn panel_queries(d: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in panels(d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("a target's expr");
            out.push((p["title"].as_str().unwrap_or("").to_string(), expr.into()));
        }
    }
    out
}

/// The query variables: name and `label_values(SELECTOR, LABEL)` split.
fn variable_queries(d: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for v in d["templating"]["list"].as_array().expect("variables") {
        if v["type"] != "query" {
            continue;
        }
        let q = v["query"]["query"].as_str().expect("a variable's query");
        let inner = q
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("not label_values(...): {q}"));
        let (selector, label) = inner
            .rsplit_once(',')
            .expect("label_values(SELECTOR, LABEL)");
        out.push((
            v["name"].as_str().expect("name").into(),
            selector.trim().into(),
            label.trim().into(),
        ));
    }
    out
}

/// A rule of the rules file.
struct Rule {
    /// The recorded series or the alert.
    name: String,
    expr: String,
    record: bool,
    labels: HashMap<String, String>,
    annotations: HashMap<String, String>,
}

fn strings(v: &Yaml) -> HashMap<String, String> {
    v.as_mapping()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let k = k.as_str().expect("a key").to_string();
            (k, v.as_str().expect("a string").to_string())
        })
        .collect()
}

fn rules() -> Vec<Rule> {
    let doc = yaml(RULES);
    let mut out = Vec::new();
    for g in doc["groups"].as_sequence().expect("groups") {
        for r in g["rules"].as_sequence().expect("rules") {
            let record = r.get("record").is_some();
            let name = r.get("record").or(r.get("alert")).expect("record or alert");
            out.push(Rule {
                name: name.as_str().expect("a name").into(),
                expr: r["expr"].as_str().expect("expr").into(),
                record,
                labels: strings(&r["labels"]),
                annotations: strings(&r["annotations"]),
            });
        }
    }
    out
}

/// The expression with its string literals blanked (same byte positions), so that a label
/// value is never taken for a name.
fn code_of(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in expr.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                    continue;
                }
                out.push_str(&" ".repeat(c.len_utf8()));
            }
            None => {
                if matches!(c, '"' | '\'' | '`') {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// The identifiers of an expression outside string literals, with their byte offsets
/// (variables, `$name`, left out).
fn identifiers(expr: &str) -> Vec<(usize, String)> {
    let code = code_of(expr);
    let b = code.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if word(b[i]) && (i == 0 || (!word(b[i - 1]) && b[i - 1] != b'$')) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            if !b[start].is_ascii_digit() {
                out.push((start, code[start..i].to_string()));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The metric names an expression reads: tasksnap's samples, and recorded series (`a:b:c`).
fn metric_names(expr: &str) -> BTreeSet<String> {
    identifiers(expr)
        .into_iter()
        .map(|(_, w)| w)
        .filter(|w| w.starts_with("tasksnap_") || w.contains(':'))
        .collect()
}

/// Sample name to type, for every family serve writes.
fn served_samples() -> HashMap<String, Type> {
    families::served()
        .iter()
        .map(|f| (f.sample_name(), f.kind))
        .collect()
}

/// What is wrong with the names an expression reads: a name no family has, a recorded
/// series the rules do not record, or one named after no family (`level:FAMILY:operation`).
fn unknown_names(expr: &str, records: &BTreeSet<String>) -> Vec<String> {
    let samples = served_samples();
    let family_names: BTreeSet<String> = families::served().iter().map(|f| f.name()).collect();
    let mut wrong = Vec::new();
    for name in metric_names(expr) {
        let ok = match name.split(':').collect::<Vec<_>>()[..] {
            [_, family, _] => records.contains(&name) && family_names.contains(family),
            [_] => samples.contains_key(&name),
            _ => false,
        };
        if !ok {
            wrong.push(name);
        }
    }
    wrong
}

/// Where an expression reads a counter other than through `rate()`/`increase()` over one of
/// `windows`, or a gauge through them.
fn misread(expr: &str, windows: &[&str]) -> Vec<String> {
    let samples = served_samples();
    let code = code_of(expr);
    let mut wrong = Vec::new();
    for (at, name) in identifiers(expr) {
        let Some(kind) = samples.get(&name) else {
            continue;
        };
        let before = code[..at].trim_end();
        let through_rate = before.ends_with("rate(") || before.ends_with("increase(");
        let mut after = code[at + name.len()..].trim_start();
        if after.starts_with('{') {
            after = &after[after.find('}').expect("a closed selector") + 1..];
        }
        let window = after
            .strip_prefix('[')
            .and_then(|a| a.split_once(']'))
            .map(|(w, _)| w);
        match kind {
            Type::Counter if !through_rate => wrong.push(format!("{name}: a counter read raw")),
            Type::Counter if !window.is_some_and(|w| windows.contains(&w)) => {
                wrong.push(format!("{name}: over {window:?}, not one of {windows:?}"))
            }
            Type::Gauge | Type::Info if through_rate => {
                wrong.push(format!("{name}: a gauge through rate()"))
            }
            _ => {}
        }
    }
    wrong
}

/// The `state` label values an expression names that are no state.
fn unknown_states(expr: &str) -> Vec<String> {
    let states: Vec<&str> = tasksnap_model::states::State::ALL
        .iter()
        .map(|s| s.name())
        .collect();
    let mut wrong = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("state") {
        let word_before = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let after = rest[i + 5..].trim_start();
        rest = &rest[i + 5..];
        let Some(op) = ["=~", "!~", "!=", "="]
            .iter()
            .find(|o| after.starts_with(**o))
        else {
            continue;
        };
        if word_before {
            continue;
        }
        let value = after[op.len()..].trim_start().trim_start_matches('"');
        let value = value.split('"').next().unwrap_or("");
        for v in value.split('|') {
            if !states.contains(&v) {
                wrong.push(format!("state{op}\"{value}\""));
            }
        }
    }
    wrong
}

/// The dashboard's query with the variables as Grafana sets them with `group` chosen (All
/// is `.*`), the rate interval of a 1 s scrape and a 20 s time range.
fn substitute(expr: &str, group: &str) -> String {
    let q = expr
        .replace("$__rate_interval", RATE_INTERVAL)
        .replace("$__range", "20s")
        .replace("$instance", ".*")
        .replace("$group", group)
        .replace("$hierarchy", ".*")
        .replace("$cgroup", ".*")
        .replace("$top", "10");
    assert!(!q.contains('$'), "a variable left in {q}");
    q
}

/// GitHub's anchors of a Markdown file's headings.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| {
            h.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

#[test]
fn promtool_checks_the_rules_and_runs_their_unit_tests() {
    let Some(promtool) = tool("TASKSNAP_PROMTOOL") else {
        return;
    };
    let rules = rules();
    let check = Command::new(&promtool)
        .args(["check", "rules"])
        .arg(top().join(RULES))
        .output()
        .expect("run promtool");
    let said = text(&check.stdout) + &text(&check.stderr);
    assert!(check.status.success(), "promtool check rules: {said}");
    assert!(
        said.contains(&format!("SUCCESS: {} rules found", rules.len())),
        "{said}"
    );
    let run = Command::new(&promtool)
        .args(["test", "rules"])
        .arg(top().join(RULE_TESTS))
        .output()
        .expect("run promtool");
    let said = text(&run.stdout) + &text(&run.stderr);
    assert!(run.status.success(), "promtool test rules: {said}");
    assert!(said.contains("SUCCESS"), "{said}");
    every_alert_is_tested_firing_and_quiet(&rules);
    every_alert_says_what_to_do(&rules);
}

/// Each alert has a unit test in which it fires, and one evaluation where it is expected
/// not to (before its `for`, or on quiet series only).
fn every_alert_is_tested_firing_and_quiet(rules: &[Rule]) {
    let tests = yaml(RULE_TESTS);
    let mut fired = BTreeSet::new();
    let mut quiet = BTreeSet::new();
    for t in tests["tests"].as_sequence().expect("tests") {
        for a in t["alert_rule_test"].as_sequence().into_iter().flatten() {
            let name = a["alertname"].as_str().expect("alertname").to_string();
            match a["exp_alerts"].as_sequence() {
                Some(e) if !e.is_empty() => fired.insert(name),
                _ => quiet.insert(name),
            };
        }
    }
    for r in rules.iter().filter(|r| !r.record) {
        assert!(fired.contains(&r.name), "no test where {} fires", r.name);
        assert!(
            quiet.contains(&r.name),
            "no test where {} stays quiet",
            r.name
        );
    }
}

/// Each alert has a severity, a summary, a description and a runbook pointing at a section
/// of docs/serve.md that exists.
fn every_alert_says_what_to_do(rules: &[Rule]) {
    let sections = anchors(&read("docs/serve.md"));
    for r in rules.iter().filter(|r| !r.record) {
        let severity = r.labels.get("severity").map(String::as_str);
        assert!(
            matches!(severity, Some("info" | "warning" | "critical")),
            "{}: severity {severity:?}",
            r.name
        );
        for a in ["summary", "description", "runbook"] {
            assert!(
                r.annotations.get(a).is_some_and(|t| !t.is_empty()),
                "{}: no {a}",
                r.name
            );
        }
        let anchor = r.annotations["runbook"]
            .split("docs/serve.md#")
            .nth(1)
            .map(|a| a.trim_end_matches(['.', ')']).to_string())
            .unwrap_or_else(|| panic!("{}: its runbook names no docs/serve.md#anchor", r.name));
        assert!(
            sections.contains(&anchor),
            "{}: docs/serve.md has no section #{anchor}",
            r.name
        );
    }
}

#[test]
fn the_dashboard_and_rules_read_only_tasksnaps_families() {
    // The checks catch what they are for.
    let none = BTreeSet::new();
    assert_eq!(
        unknown_names("rate(tasksnap_group_cpu_total[5m])", &none),
        ["tasksnap_group_cpu_total"]
    );
    assert_eq!(
        unknown_names("x:tasksnap_group_cpu_seconds:rate5m", &none).len(),
        1
    );
    assert!(unknown_names("tasksnap_group_threads{group=\"tasksnap_x\"}", &none).is_empty());
    assert_eq!(
        misread("rate(tasksnap_group_threads[5m])", &["5m"]).len(),
        1
    );
    assert_eq!(misread("tasksnap_group_exits_total", &["5m"]).len(), 1);
    assert_eq!(
        misread("rate(tasksnap_group_exits_total[1m])", &["5m"]).len(),
        1
    );
    assert_eq!(
        unknown_states("x{state=\"runable\"}"),
        ["state=\"runable\""]
    );
    assert!(unknown_states("x{state=~\"running|disk\", state_seconds=\"y\"}").is_empty());

    let rules = rules();
    let records: BTreeSet<String> = rules
        .iter()
        .filter(|r| r.record)
        .map(|r| r.name.clone())
        .collect();
    let mut wrong = Vec::new();
    for r in &rules {
        if r.record {
            wrong.extend(
                unknown_names(&r.name, &records)
                    .into_iter()
                    .map(|n| (n, "name")),
            );
        }
        let found = unknown_names(&r.expr, &records).into_iter();
        wrong.extend(found.map(|n| (n, r.name.as_str())));
        let found = misread(&r.expr, &["1m", "5m"]).into_iter();
        wrong.extend(found.map(|n| (n, r.name.as_str())));
        let found = unknown_states(&r.expr).into_iter();
        wrong.extend(found.map(|n| (n, r.name.as_str())));
    }
    let d = dashboard();
    let queries = panel_queries(&d);
    assert!(queries.len() >= 30, "{} panel queries", queries.len());
    for (title, q) in &queries {
        // The dashboard works without the rules: it reads the exporter's own series.
        let found = unknown_names(q, &BTreeSet::new()).into_iter();
        wrong.extend(found.map(|n| (n, title.as_str())));
        let found = misread(q, &["$__rate_interval", "$__range"]).into_iter();
        wrong.extend(found.map(|n| (n, title.as_str())));
        let found = unknown_states(q).into_iter();
        wrong.extend(found.map(|n| (n, title.as_str())));
    }
    for (_, selector, _) in variable_queries(&d) {
        let found = unknown_names(&selector, &BTreeSet::new()).into_iter();
        wrong.extend(found.map(|n| (n, "a variable")));
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    the_dashboard_is_grafanas_current_schema(&d);
}

/// Grafana 10/11's schema, the data source a variable of type prometheus that every panel
/// and query uses, variables for the instance, the group and the cgroup, and a layout that
/// fits its 24 columns with no two panels sharing an id.
fn the_dashboard_is_grafanas_current_schema(d: &Value) {
    let schema = d["schemaVersion"].as_u64().expect("schemaVersion");
    assert!((38..=41).contains(&schema), "schemaVersion {schema}");
    let vars = d["templating"]["list"].as_array().expect("variables");
    let var = |n: &str| vars.iter().find(|v| v["name"] == n);
    let ds = var("datasource").expect("a datasource variable");
    assert_eq!(
        (&ds["type"], &ds["query"]),
        (&"datasource".into(), &"prometheus".into())
    );
    for n in ["instance", "group", "cgroup"] {
        assert_eq!(var(n).map(|v| &v["type"]), Some(&"query".into()), "{n}");
    }
    for n in ["group", "cgroup"] {
        assert_eq!(var(n).map(|v| &v["allValue"]), Some(&".*".into()), "{n}");
    }
    let want = serde_json::json!({"type": "prometheus", "uid": "${datasource}"});
    let mut ids = BTreeSet::new();
    for p in panels(d) {
        let title = p["title"].as_str().unwrap_or("");
        assert!(
            ids.insert(p["id"].as_u64().expect("id")),
            "{title}: id taken"
        );
        let g = &p["gridPos"];
        let (x, w) = (g["x"].as_u64().expect("x"), g["w"].as_u64().expect("w"));
        assert!(x + w <= 24, "{title}: beyond 24 columns");
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"], want, "{title}");
        for t in p["targets"].as_array().expect("targets") {
            assert_eq!(t["datasource"], want, "{title}");
        }
    }
}

#[test]
fn every_panel_query_returns_series_from_a_real_prometheus() {
    skip_unless_root!("BPF state accounting and exit records");
    let Some(prometheus) = tool("TASKSNAP_PROMETHEUS") else {
        return;
    };
    // A CPU hog (lg-busy), a task in D (lg-dstate), a process of threads (lg-threads), and
    // 20 processes a second forked and ending (lg-ch-*).
    let load = Load::spawn(&[
        "--busy",
        "1",
        "--dstate",
        "--threads",
        "3",
        "--churn",
        "--procs-per-sec",
        "20",
        "--threads-per-sec",
        "0",
    ])
    .expect("load");
    let server = Server::start(&["--interval", "1", "--backend", "bpf"]);
    assert!(server.started.contains("exits: bpf"), "{}", server.started);
    the_exporter_writes_only_the_tables_families(&server.scrape());
    let rules_file = top().join(RULES);
    let prom = Prometheus::start_with_rules(&prometheus, server.addr, &[rules_file.as_path()]);
    // Samples enough for a rate over the rate interval (the queries are retried while the
    // load's series fill in).
    prom.wait_for("count(up{job=\"tasksnap\"} offset 3s)");
    let d = dashboard();
    let queries = panel_queries(&d);
    let all: Vec<String> = queries.iter().map(|(_, q)| substitute(q, ".*")).collect();
    // The panels by group, with only the load's groups chosen: the load makes their series.
    let of_the_load: Vec<String> = queries
        .iter()
        .filter(|(_, q)| q.contains("$group"))
        .map(|(_, q)| substitute(q, "lg-.*"))
        .collect();
    let variables: Vec<String> = variable_queries(&d)
        .iter()
        .map(|(_, sel, label)| format!("count by ({label}) ({})", substitute(sel, ".*")))
        .collect();
    let records: Vec<String> = rules()
        .into_iter()
        .filter(|r| r.record)
        .map(|r| r.name)
        .collect();
    let mut asked: Vec<&String> = all.iter().chain(&of_the_load).collect();
    asked.extend(variables.iter().chain(&records));
    assert!(of_the_load.len() >= 15, "{of_the_load:#?}");
    each_answers_with_series(&prom, &asked);
    every_rule_evaluates(&prom);
    drop(prom);
    drop(load);
    let (code, said) = server.terminate();
    assert_eq!(code, Some(0), "{said}");
}

/// Every family in a scrape (the text format's names: a counter's with `_total`, an info's
/// with `_info`) is one of the table's.
fn the_exporter_writes_only_the_tables_families(exposition: &str) {
    let samples = served_samples();
    let written: Vec<&str> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(written.len() > 30, "{exposition}");
    for name in written {
        assert!(
            samples.contains_key(name),
            "{name} is not in families::served()"
        );
    }
}

/// Each query has series, within 30 s (a busy host can be late with a collection or a
/// scrape): those that have none by then, listed.
fn each_answers_with_series(prom: &Prometheus, queries: &[&String]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut left: Vec<&String> = queries.to_vec();
    loop {
        left.retain(|q| prom.series(q).is_empty());
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no series for {} of {} queries: {left:#?}",
            left.len(),
            queries.len()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Prometheus has evaluated every rule of the file, none with an error.
fn every_rule_evaluates(prom: &Prometheus) {
    let want = rules().len();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = prom.api("/api/v1/rules");
        let got: Vec<(String, String, String)> = v["data"]["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .flat_map(|g| g["rules"].as_array().expect("rules").iter())
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
                (s("name"), s("health"), s("lastError"))
            })
            .collect();
        assert_eq!(got.len(), want, "{got:#?}");
        let errors: Vec<_> = got.iter().filter(|r| r.1 == "err").collect();
        assert!(errors.is_empty(), "{errors:#?}");
        if got.iter().all(|r| r.1 == "ok") {
            return;
        }
        assert!(Instant::now() < deadline, "not all evaluated: {got:#?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
