"""Type stubs of the native half (python/src). The public API is tasksnap/__init__.py;
these functions are its plumbing and may change."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

def setup(classes: Dict[str, type]) -> None: ...
def attr_names() -> List[Tuple[str, bool]]:
    """(name, has snapshot() columns) of every attribute a pass answers."""
def process_objects(
    cls: type,
    attrs: Sequence[str],
    ad_value: Any,
    with_info: bool,
    cache: Dict[int, Any],
    backend: str = "auto",
    num_cpus: Optional[int] = None,
) -> List[Any]:
    """Every process as an instance of ``cls`` (``Process``), sorted by pid: the one in
    ``cache`` when it is the same process, else a new one; ``_info`` the attributes when
    ``with_info``, else ``{}``; ``_cpu_last`` set when ``num_cpus`` is given. ``cache``
    then holds these."""

def process(
    pid: int,
    attrs: Sequence[str],
    ad_value: Any,
    use_ad: bool,
    expect_start_ns: Optional[int] = None,
    name: Any = None,
    thread_ids: bool = True,
) -> Tuple[int, Dict[str, Any]]:
    """(start_time_ns, info) of one process (with ``thread_ids``, a thread id is read as
    psutil's ``Process(tid)``: /proc/TID); raises NoSuchProcess, ZombieProcess,
    AccessDenied, ReadTimeout."""

def threads(pid: int, expect_start_ns: Optional[int] = None, name: Any = None) -> List[Any]: ...
def children(
    pid: int,
    recursive: bool,
    expect_start_ns: Optional[int] = None,
    name: Any = None,
    backend: str = "auto",
) -> List[Tuple[int, int]]: ...
class Columns:
    """One snapshot() pass as Arrow arrays built in Rust, exported through the Arrow
    PyCapsule protocol (``pa.record_batch(cols)``, ``pa.table(cols)``) without a copy."""

    num_rows: int
    column_names: List[str]
    def __arrow_c_schema__(self) -> Any: ...
    def __arrow_c_array__(self, requested_schema: Any = None) -> Tuple[Any, Any]: ...
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...
    def values_address(self, column: str) -> int:
        """Address of the column's last buffer (its values or bytes)."""
    def to_pydict(self) -> Dict[str, List[Any]]: ...

def snapshot(attrs: Sequence[str], threads: bool = False, backend: str = "auto") -> Columns: ...
def column_names(attrs: Sequence[str], threads: bool = False) -> List[str]: ...
def states(
    pids: Optional[Sequence[int]], interval: float, backend: str = "auto"
) -> Tuple[str, List[Tuple[int, int, str, Tuple[float, float, float, float, float, float], Optional[Tuple[str, List[str]]], bool]]]: ...
def cgroup_fields() -> List[Tuple[str, str, str, str]]:
    """(name, kind, unit, help) of every field of the model's cgroup table (CGROUP_FIELDS), in
    order; kind "counter", "gauge" or "limit", unit "ns", "us", "bytes" or "count"."""
def cgroup_rate_names() -> List[str]:
    """The rates that follow the fields in a cgroups() row: cpu_percent, throttled_percent,
    psi_cpu_some_percent."""
def cgroups(depth: int, interval: Optional[float] = None) -> List[Tuple[Any, ...]]:
    """The host's cgroups down to ``depth``: (path, hierarchy, controllers, *fields, *rates),
    a field an int, inf for a limit that is none, None when not read; the rates None without
    an interval."""
def cgroups_columns(depth: int, interval: Optional[float] = None) -> Columns:
    """The same as columns: path, path_bytes, hierarchy, controllers, fields, rates."""
def last_report() -> Optional[Dict[str, Any]]: ...
def boot_time() -> float: ...
def env_proc_root() -> Any:
    """The /proc root the environment names (TASKSNAP_PROC_ROOT), else /proc (a path)."""
def set_proc_root(root: Any) -> None:
    """Every later read on the /proc tree at ``root`` (PROCFS_PATH assigned)."""
def env_backend() -> str:
    """The backend the environment names (TASKSNAP_BACKEND), else "auto"."""
def start_ticks(start_time_ns: int) -> int:
    """A start time in clock ticks since boot, as /proc/PID/stat says it."""
def create_time(start_time_ns: int) -> float:
    """psutil's create_time of a process that started then: ticks / CLK_TCK + boot time."""
def cpu_percent(delta_proc_s: float, delta_timer_s: float, num_cpus: float) -> float:
    """psutil's cpu_percent from the CPU and timer seconds between two calls."""

# One process's files and sockets (python/src/files.rs; tasksnap/_files.py makes psutil's
# named tuples of these plain tuples). Each checks the pid against expect_start_ns first.
def cwd(pid: int, expect_start_ns: Optional[int] = None, name: Any = None) -> str: ...
def open_files(
    pid: int, expect_start_ns: Optional[int] = None, name: Any = None
) -> List[Tuple[str, int, int, str, int]]: ...
def memory_maps(
    pid: int, grouped: bool = True, expect_start_ns: Optional[int] = None, name: Any = None
) -> List[Tuple[Any, ...]]: ...
def memory_extras(
    pid: int, expect_start_ns: Optional[int] = None, name: Any = None
) -> Tuple[int, int, int]: ...
def net_connections(
    pid: int, kind: str = "inet", expect_start_ns: Optional[int] = None, name: Any = None
) -> List[Tuple[int, int, int, Any, Any, str]]: ...
def all_net_connections(kind: str = "inet") -> List[Tuple[int, int, int, Any, Any, str, Optional[int]]]: ...
def ionice_get(pid: int, expect_start_ns: Optional[int] = None, name: Any = None) -> Tuple[int, int]: ...
def ionice_set(
    pid: int, ioclass: int, value: int, expect_start_ns: Optional[int] = None, name: Any = None
) -> None: ...
def terminal(pid: int, expect_start_ns: Optional[int] = None, name: Any = None) -> Optional[str]: ...
def tty_path(tty_nr: int) -> Optional[str]: ...

# Host figures (python/src/system.rs), raw: tasksnap/_system.py applies psutil's formulas.
def cpu_count(logical: bool) -> Optional[int]: ...
def cpu_times(percpu: bool) -> Tuple[int, List[int], List[List[int]]]:
    """(CLK_TCK, the aggregate cpu line's ticks, each cpuN line's ticks when percpu)."""
def cpu_stats() -> Tuple[int, int, int]: ...
def meminfo() -> Dict[str, int]:
    """The meminfo fields psutil reads, KiB, by name, and page_size (bytes)."""
def zoneinfo_low_pages() -> Optional[int]: ...
def swap_io_pages() -> Optional[Tuple[int, int]]: ...
def getloadavg() -> Tuple[float, float, float]: ...
def sysinfo_swap_bytes() -> Optional[Tuple[int, int]]: ...
def users() -> List[Tuple[bytes, bytes, bytes, int, int]]: ...
def pids() -> List[int]: ...
