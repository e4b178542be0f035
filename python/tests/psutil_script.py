"""A script written against psutil's API and nothing else: it reads every `Process` method
and attribute psutil has on Linux, and the module's process helpers, for the pids it is
given, and returns what it saw as plain JSON values (a named tuple as its type name and
fields, an exception as its class name).

The differential test imports it twice: once as it is, and once with `psutil` swapped for
`tasksnap` in `sys.modules` (the import swap a user makes), and compares the two.
"""

import enum
import json
import sys

import psutil

# Each call: (label, method, args). Every public Process method psutil has on Linux that
# reads; the actions are exercised by the test itself.
CALLS = [
    ("name", "name", ()),
    ("exe", "exe", ()),
    ("cmdline", "cmdline", ()),
    ("environ", "environ", ()),
    ("create_time", "create_time", ()),
    ("status", "status", ()),
    ("cwd", "cwd", ()),
    ("username", "username", ()),
    ("uids", "uids", ()),
    ("gids", "gids", ()),
    ("terminal", "terminal", ()),
    ("nice", "nice", ()),
    ("ionice", "ionice", ()),
    ("rlimit_nofile", "rlimit", (psutil.RLIMIT_NOFILE,)),
    ("rlimit_core", "rlimit", (psutil.RLIMIT_CORE,)),
    ("io_counters", "io_counters", ()),
    ("num_ctx_switches", "num_ctx_switches", ()),
    ("num_fds", "num_fds", ()),
    ("num_threads", "num_threads", ()),
    ("threads", "threads", ()),
    ("cpu_times", "cpu_times", ()),
    ("cpu_percent", "cpu_percent", ()),
    ("cpu_percent_again", "cpu_percent", ()),
    ("cpu_affinity", "cpu_affinity", ()),
    ("cpu_num", "cpu_num", ()),
    ("memory_info", "memory_info", ()),
    ("memory_full_info", "memory_full_info", ()),
    ("memory_percent", "memory_percent", ()),
    ("memory_percent_uss", "memory_percent", ("uss",)),
    ("memory_maps", "memory_maps", ()),
    ("memory_maps_flat", "memory_maps", (False,)),
    ("open_files", "open_files", ()),
    ("net_connections", "net_connections", ()),
    ("net_connections_all", "net_connections", ("all",)),
    ("net_connections_unix", "net_connections", ("unix",)),
    ("net_connections_tcp6", "net_connections", ("tcp6",)),
    ("ppid", "ppid", ()),
    ("parent", "parent", ()),
    ("parents", "parents", ()),
    ("children", "children", ()),
    ("children_all", "children", (True,)),
    ("is_running", "is_running", ()),
]


def plain(v):
    """A JSON value for what psutil returns."""
    if isinstance(v, psutil.Process):
        return {"Process": v.pid}
    if isinstance(v, enum.Enum):
        return {"enum": type(v).__name__, "value": v.value}
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return {"tuple": type(v).__name__, **{f: plain(getattr(v, f)) for f in v._fields}}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return v


def call(fn, *args):
    try:
        return {"ok": plain(fn(*args))}
    except psutil.Error as e:
        return {"err": type(e).__name__, "pid": getattr(e, "pid", None)}
    except Exception as e:  # noqa: BLE001 - a crash of either library is a finding
        return {"err": type(e).__name__, "msg": str(e)}


def observe(pids):
    """What the library says of `pids`: each Process method, `as_dict()`, process_iter's
    `info` with every attribute, and the module's process helpers."""
    out = {"process": {}, "iter": {}, "module": {}}
    for pid in pids:
        seen = {}
        try:
            p = psutil.Process(pid)
        except psutil.Error as e:
            out["process"][str(pid)] = {"init": {"err": type(e).__name__}}
            continue
        for label, meth, args in CALLS:
            seen[label] = call(lambda: getattr(p, meth)(*args))
        seen["as_dict"] = call(lambda: p.as_dict(ad_value="AD"))
        out["process"][str(pid)] = seen
    want = set(pids)
    iterated = {}
    for p in psutil.process_iter(attrs=[], ad_value="AD"):
        if p.pid in want:
            iterated[str(p.pid)] = plain(p.info)
    out["iter"] = iterated
    out["module"] = {
        "pids": sorted(set(psutil.pids()) & want),
        "pid_exists": {str(pid): psutil.pid_exists(pid) for pid in pids},
        "attrs": sorted(psutil.Process().as_dict()),
    }
    return out


if __name__ == "__main__":
    # `python psutil_script.py tasksnap PID...`: the same script with the import swapped.
    if sys.argv[1] == "tasksnap":
        import tasksnap

        sys.modules["psutil"] = tasksnap
        psutil = tasksnap
    json.dump(observe([int(a) for a in sys.argv[2:]]), sys.stdout)
