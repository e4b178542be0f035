#!/usr/bin/env python3
"""bench/serve.sh's report: the JSON it wrote -> a markdown table on stdout and a TSV.

   python3 bench/serve-report.py target/bench/serve-STAMP.json [OUT.tsv]
"""
import json
import sys

JOBS = ["tasksnap", "baseline", "process-exporter", "node-exporter"]


def ms(v):
    return "n/a" if v is None else (f"{v * 1000:.1f}" if v < 10 else f"{v * 1000:.0f}")


def pct(v):
    return "n/a" if v is None else f"{v:.2f}"


def mib(kib):
    return "n/a" if kib is None else f"{kib / 1024:.1f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def main():
    data = json.load(open(sys.argv[1]))
    tsv = open(sys.argv[2], "w") if len(sys.argv) > 2 else None
    sizes = data["sizes"]
    out = []
    p = out.append
    p(f"Run {data['when']}, kernel {data['kernel']}, {data['cpus']} CPUs; {data['tasksnap']}; "
      f"Prometheus scrape_interval {data['scrape_interval_s']}s, scrape_timeout "
      f"{data['scrape_timeout_s']}s, window {data['duration_s']}s per size.")
    p("")
    if data.get("baseline"):
        p(f"baseline: a second tasksnap serve from {data['baseline']}, on the same load, scraped by the same Prometheus.")
        p("")
    p("| load | exporter | scrape median ms | scrape p99 ms | scrape max ms | up | scrapes | series | CPU % of a CPU | RSS MiB (peak) |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    if tsv:
        print("size\texporter\tscrape_median_s\tscrape_max_s\tup\tscrapes\tseries\tseries_min\tseries_max"
              "\tcpu_pct\trss_kib\thwm_kib", file=tsv)
    for s in sizes:
        load = f"{s['size']} ({s['machine_tasks']}/{s['tasks_at_window_end']} tasks)"
        for job in JOBS + ["prometheus"]:
            if job not in s["jobs"]:
                continue
            j = s["jobs"][job]
            if job == "prometheus":
                p(f"| {load} | (prometheus, the scraper) | | | | | | | {pct(j['cpu_pct'])} | "
                  f"{mib(j['rss_kib'])} ({mib(j['hwm_kib'])}) |")
                continue
            series = j["series"]
            if j["series_min"] != j["series_max"]:
                series = f"{series} ({j['series_min']}-{j['series_max']})"
            p(f"| {load} | {job} | {ms(j['scrape_median_s'])} | {ms(j.get('scrape_p99_s'))} | {ms(j['scrape_max_s'])} | "
              f"{'n/a' if j['up'] is None else format(j['up'], '.2f')} | {j['scrapes']} | {series} | {pct(j['cpu_pct'])} | "
              f"{mib(j['rss_kib'])} ({mib(j['hwm_kib'])}) |")
            if tsv:
                print("\t".join(str(x) for x in [s["size"], job, j["scrape_median_s"], j["scrape_max_s"],
                                                 j["up"], j["scrapes"], j["series"], j["series_min"],
                                                 j["series_max"], j["cpu_pct"], j["rss_kib"], j["hwm_kib"]]),
                      file=tsv)
    p("")
    p("tasksnap serve itself (collection every 15 s; load test with Prometheus and the other exporters stopped, the load up):")
    p("")
    p("| load | collection CPU % (rate of tasksnap_collect_cpu_seconds_total) | collection median / max ms | first collection: wall / CPU ms | groups | one client: median / max ms | ab round: p50 / p99 / max ms, failed | RSS MiB before -> after |")
    p("|---|---:|---:|---:|---:|---:|---|---|")
    if tsv:
        print("", file=tsv)
        print("size\tcollect_cpu_pct\tcollect_median_s\tcollect_max_s\tgroups\tround\tp50_ms\tp99_ms\tmax_ms"
              "\tfailed\tfailed_detail\trps\trss_before_kib\trss_after_kib", file=tsv)
    for s in sizes:
        t = s["tasksnap"]
        rounds = "<br>".join(
            f"{r['round']}: {r['p50_ms']:.0f} / {r['p99_ms']:.0f} / {r['max_ms']:.0f}, {r['failed']}"
            + (f" ({r['failed_detail']})" if r["failed"] else "")
            for r in s["ab"])
        rss = "<br>".join(f"{mib(r['rss_before_kib'])} -> {mib(r['rss_after_kib'])}" for r in s["ab"])
        p(f"| {s['size']} | {pct(t['collect_cpu_pct'])} | {ms(t['collect_median_s'])} / "
          f"{ms(t['collect_max_s'])} | {ms(s['first_collection']['collect_s'])} / "
          f"{ms(s['first_collection']['cpu_s'])} | {t['groups']} | {ms(s['single_client']['median_s'])} / "
          f"{ms(s['single_client']['max_s'])} | {rounds} | {rss} |")
        if tsv:
            for r in s["ab"]:
                print("\t".join(str(x) for x in [s["size"], t["collect_cpu_pct"], t["collect_median_s"],
                                                 t["collect_max_s"], t["groups"], r["round"], r["p50_ms"],
                                                 r["p99_ms"], r["max_ms"], r["failed"], r["failed_detail"],
                                                 r["rps"], r["rss_before_kib"], r["rss_after_kib"]]),
                      file=tsv)
    for s in sizes:
        if s.get("died"):
            p("")
            p(f"**{s['size']}: died during the window:** {s['died']}")
    p("")
    p("Ratios (other exporter / tasksnap, same run):")
    p("")
    for s in sizes:
        ts = s["jobs"]["tasksnap"]
        parts = []
        for job in ["baseline", "process-exporter", "node-exporter"]:
            if job not in s["jobs"]:
                continue
            j = s["jobs"][job]
            rm = ratio(j["scrape_median_s"], ts["scrape_median_s"])
            rc = ratio(j["cpu_pct"], ts["cpu_pct"])
            parts.append(f"{job}: median scrape x{rm:.0f}" if rm else f"{job}: median scrape n/a")
            parts[-1] += f", CPU x{rc:.1f}" if rc else ", CPU n/a"
        p(f"- {s['size']}: " + "; ".join(parts))
    p("")
    p("Targets:")
    p("")
    for s in sizes:
        ts = s["jobs"]["tasksnap"]
        mx, md, p99s = ts["scrape_max_s"], ts["scrape_median_s"], ts.get("scrape_p99_s")
        ok = mx is not None and mx <= 0.020
        p(f"- {s['size']}: scrape_duration_seconds <= 20 ms: {'met' if ok else 'NOT met'} "
          f"(median {ms(md)} ms, p99 {ms(p99s)} ms, max {ms(mx)} ms over {ts['scrapes']} scrapes, up {ts['up']:.2f})")
        ok99 = p99s is not None and p99s <= 0.020
        p(f"- {s['size']}: scrape p99 <= 20 ms: {'met' if ok99 else 'NOT met'} ({ms(p99s)} ms at a "
          f"{data['scrape_interval_s']} s scrape interval)")
        c = s["tasksnap"]["collect_cpu_pct"]
        p(f"- {s['size']}: collection <= 1% of a CPU at 15 s: {'met' if c is not None and c <= 1 else 'NOT met'} "
          f"({pct(c)}%; whole process incl. answering scrapes {pct(ts['cpu_pct'])}%)")
        p99 = max(r["p99_ms"] for r in s["ab"])
        failed = sum(r["failed"] or 0 for r in s["ab"])
        p(f"- {s['size']}: load test p99 <= 20 ms: {'met' if p99 <= 20 else 'NOT met'} "
          f"(worst round p99 {p99:.0f} ms; {failed} failed requests in all rounds)")
        after = [r["rss_after_kib"] for r in s["ab"]]
        first = s["ab"][0]["rss_before_kib"]
        p(f"- {s['size']}: memory across load-test rounds: RSS {mib(first)} MiB before round 1, after each round "
          + ", ".join(mib(a) for a in after) + f" MiB (growth after round 1 to the end: "
          f"{(after[-1] - after[0]) / 1024:+.1f} MiB)")
    by = {s["size"]: s for s in sizes}
    if "procs:20000" in by and "procs:50000" in by:
        a = by["procs:20000"]["jobs"]["tasksnap"]["series"]
        b = by["procs:50000"]["jobs"]["tasksnap"]["series"]
        la = by["procs:20000"]["tasksnap"]["load_group_series"]
        lb = by["procs:50000"]["tasksnap"]["load_group_series"]
        p(f"- series unchanged 20,000 -> 50,000 processes: {'met' if a == b else 'NOT met'} "
          f"(tasksnap {a} -> {b}; the load's group lg-proc: {la} -> {lb} series; "
          f"process-exporter {by['procs:20000']['jobs'].get('process-exporter', {}).get('series')} -> "
          f"{by['procs:50000']['jobs'].get('process-exporter', {}).get('series')})")
    print("\n".join(out))


if __name__ == "__main__":
    main()
