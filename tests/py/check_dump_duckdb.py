#!/usr/bin/env python3
"""Checks a Parquet file written by `tasksnap dump --format parquet` through DuckDB.

Usage:
    python3 check_dump_duckdb.py FILE.parquet --pid N --expect-rows K
        [--tid T] [--expect-state-seconds running=X,disk=Y,...] [--tolerance S]
        [--expect-comm TEXT] [--expect-comm-bytes HEX|null]

Selects the rows of process N (and of thread T with --tid; a threads dump has one row per
thread per reading, a processes dump one per process per reading) and checks that:
  - there are K of them (as many as the readings that saw the task);
  - `time` reads as a UTC timestamp (TIMESTAMP WITH TIME ZONE) and grows from row to row
    of one thread;
  - with --expect-state-seconds, each named state's seconds (`running_s`, `disk_s`, ...;
    also `alive`) summed over those rows equal the given ones within --tolerance seconds
    (default 0.001): what `tasksnap states --replay` prints for the same window;
  - with --expect-comm, every row's `comm` is that text;
  - with --expect-comm-bytes, every row's `comm_bytes` is a BLOB of those bytes (given in
    hex), or NULL for `null` (the comm was valid UTF-8).

Exits 0 when everything matches, 1 with a message per mismatch otherwise, 2 on bad usage
or a file DuckDB cannot read. Needs the `duckdb` Python package.
"""

import argparse
import sys

STATES = ("running", "runnable", "sleeping", "disk", "stopped", "other", "alive")


def parse_states(text):
    """`running=1.5,disk=0` -> {"running": 1.5, "disk": 0.0}."""
    out = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in STATES:
            raise argparse.ArgumentTypeError(
                f"bad state seconds {part!r}: want NAME=SECONDS with NAME one of {', '.join(STATES)}"
            )
        try:
            out[name] = float(value)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"bad seconds in {part!r}") from e
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="the Parquet dump")
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--tid", type=int, help="only this thread's rows (threads dumps)")
    ap.add_argument("--expect-rows", type=int, required=True)
    ap.add_argument("--expect-state-seconds", type=parse_states, default={})
    ap.add_argument("--tolerance", type=float, default=0.001, help="seconds (default 0.001)")
    ap.add_argument("--expect-comm")
    ap.add_argument("--expect-comm-bytes", help="hex, or null")
    args = ap.parse_args(argv)

    try:
        import duckdb
    except ImportError:
        print("check_dump_duckdb: the duckdb Python package is not installed", file=sys.stderr)
        return 2

    con = duckdb.connect()
    try:
        con.read_parquet(args.file).create_view("dump")
        schema = {name: ty for name, ty, *_ in con.execute("DESCRIBE dump").fetchall()}
    except duckdb.Error as e:
        print(f"check_dump_duckdb: DuckDB cannot read {args.file}: {e}", file=sys.stderr)
        return 2

    failures = []
    for col in ("time", "pid"):
        if col not in schema:
            print(f"check_dump_duckdb: {args.file} has no `{col}` column", file=sys.stderr)
            return 2
    if schema["time"] != "TIMESTAMP WITH TIME ZONE":
        failures.append(f"`time` is {schema['time']}, not TIMESTAMP WITH TIME ZONE")

    where = "pid = ?"
    params = [args.pid]
    if args.tid is not None:
        if "tid" not in schema:
            print("check_dump_duckdb: --tid given but the dump has no `tid` column", file=sys.stderr)
            return 2
        where += " AND tid = ?"
        params.append(args.tid)
    who = f"pid {args.pid}" + (f" tid {args.tid}" if args.tid is not None else "")

    (rows,) = con.execute(f"SELECT count(*) FROM dump WHERE {where}", params).fetchone()
    if rows != args.expect_rows:
        failures.append(f"{who}: {rows} rows, expected {args.expect_rows}")

    # Time grows within each thread (or process) of the selection.
    key = "tid" if "tid" in schema else "pid"
    (backwards,) = con.execute(
        f"""SELECT count(*) FROM (
              SELECT time, lag(time) OVER (PARTITION BY {key} ORDER BY time) AS prev
              FROM dump WHERE {where}) WHERE prev IS NOT NULL AND time <= prev""",
        params,
    ).fetchone()
    if backwards:
        failures.append(f"{who}: {backwards} rows whose time does not follow the previous one")
    span = con.execute(
        f"SELECT min(time)::VARCHAR, max(time)::VARCHAR FROM dump WHERE {where}", params
    ).fetchone()

    for state, want in args.expect_state_seconds.items():
        col = f"{state}_s"
        if col not in schema:
            failures.append(f"no `{col}` column (state seconds are in threads dumps)")
            continue
        (got,) = con.execute(
            f"SELECT coalesce(sum({col}), 0) FROM dump WHERE {where}", params
        ).fetchone()
        if abs(got - want) > args.tolerance:
            failures.append(
                f"{who}: {col} sums to {got:.6f} s, expected {want:.6f} s (tolerance {args.tolerance} s)"
            )

    if args.expect_comm is not None:
        comms = [c for (c,) in con.execute(f"SELECT DISTINCT comm FROM dump WHERE {where}", params).fetchall()]
        if comms != [args.expect_comm]:
            failures.append(f"{who}: comm {comms!r}, expected {[args.expect_comm]!r}")

    if args.expect_comm_bytes is not None:
        want = None if args.expect_comm_bytes == "null" else bytes.fromhex(args.expect_comm_bytes)
        if schema.get("comm_bytes") != "BLOB":
            failures.append(f"`comm_bytes` is {schema.get('comm_bytes')}, not BLOB")
        else:
            got = [c for (c,) in con.execute(
                f"SELECT DISTINCT comm_bytes FROM dump WHERE {where}", params).fetchall()]
            if got != [want]:
                failures.append(f"{who}: comm_bytes {got!r}, expected {[want]!r}")

    if failures:
        for f in failures:
            print(f"check_dump_duckdb: {f}", file=sys.stderr)
        return 1
    print(f"check_dump_duckdb: {who}: {rows} rows from {span[0]} to {span[1]}, all as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
