//! `process_iter`'s pass: every process as a `Process` object of the caller's class, made
//! here in one go from one whole-system pass (psutil's cache of objects kept, each `info`
//! made from the pass, `cpu_percent` since each object's last call).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyType};
use tasksnap_model::{Backend, Selector, Snapshot, Task};

use crate::attrs::{groups_for, parse_attrs, Attr};
use crate::host;
use crate::psutil::cpu_percent;
use crate::values::Ctx;

/// The whole-system pass `process_iter(attrs)` needs: the parsed attributes, the snapshot
/// of every process with the groups they read, their names as interned dict keys, and the
/// backend asked for.
type Pass<'py> = (Vec<Attr>, Snapshot, Vec<Bound<'py, PyString>>, Backend);

fn pass_for<'py>(py: Python<'py>, attrs: &[String], backend: &str) -> PyResult<Pass<'py>> {
    let attrs = parse_attrs(attrs)?;
    let backend = crate::backend_arg(backend)?;
    let (groups, real_ids) = groups_for(&attrs);
    let snap = crate::interrupt::run(py, move |_| {
        host::bulk(backend, Selector::AllProcesses, groups, real_ids, false)
    })?
    .map_err(crate::collect_error)?;
    let keys = attrs
        .iter()
        .map(|a| PyString::intern(py, a.name()))
        .collect();
    Ok((attrs, snap, keys, backend))
}

/// Python's cyclic garbage collector paused while this lives (when it was running).
///
/// `process_objects` makes about ten objects per process, most of them containers the
/// collector tracks (the info dict, the Process, the command line's list): at 50,000
/// processes, collections triggered meanwhile cost 200 ms of the 340 ms it took to make
/// them, traversing again and again everything already made (and whatever else the caller
/// holds: psutil's cache of Process objects, in the benchmark). None of these objects can
/// form a cycle while they are made, so the collector has nothing to find in them then.
/// The objects stay tracked: the next collection after the call looks at them once.
struct GcPaused<'py> {
    gc: Option<Bound<'py, PyModule>>,
}

impl<'py> GcPaused<'py> {
    fn new(py: Python<'py>) -> PyResult<GcPaused<'py>> {
        let gc = PyModule::import(py, "gc")?;
        if !gc.call_method0("isenabled")?.is_truthy()? {
            return Ok(GcPaused { gc: None });
        }
        gc.call_method0("disable")?;
        Ok(GcPaused { gc: Some(gc) })
    }
}

impl Drop for GcPaused<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc {
            // Nothing to do about a failure to re-enable it but not hide the call's result.
            let _ = gc.call_method0("enable");
        }
    }
}

/// `process_iter(attrs, ad_value)` as `Process` objects of class `cls` (tasksnap's), sorted by
/// pid, made here in one go. As psutil, a process already in `cache` (pid -> `Process` of
/// the previous call) with the same start time is the same object again; the others are
/// new, with `_pid`, `_start_ns` and `_name` (the name when asked for, else None). Each
/// gets its `info` dict made here (`attrs`, an unreadable one `ad_value`) when `with_info`,
/// else `{}`: made with Python's cyclic collector paused ([`GcPaused`]), which costs less
/// than making them when first read, where the collector runs over whatever the caller
/// holds as often as they are made (psutil's cache of 20,000 objects in the benchmark: 51
/// ms to read every `info` of 20,000 processes against 21 ms with the collector paused).
/// `cache` then holds this call's processes only.
///
/// With `num_cpus` (psutil's `cpu_count()`, given when `cpu_percent` is asked), each
/// object's `cpu_percent` is psutil's "since the last call": its `_cpu_last` (the timer and
/// CPU seconds of its last call, or None) against this pass, 0.0 on a first call; `_cpu_last`
/// is then this pass's, for the next call of either `process_iter` or `Process.cpu_percent`.
#[pyfunction]
#[pyo3(signature = (cls, attrs, ad_value, with_info, cache, backend="auto", num_cpus=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn process_objects<'py>(
    py: Python<'py>,
    cls: Bound<'py, PyType>,
    attrs: Vec<String>,
    ad_value: Bound<'py, PyAny>,
    with_info: bool,
    cache: Bound<'py, PyDict>,
    backend: &str,
    num_cpus: Option<u32>,
) -> PyResult<Bound<'py, PyList>> {
    let (attrs, snap, keys, backend) = pass_for(py, &attrs, backend)?;
    // psutil's timer: monotonic seconds times the CPU count, read as the pass ends.
    let cpus = f64::from(num_cpus.unwrap_or(1).max(1));
    let timer_s =
        num_cpus.map(|_| tasksnap_sys::clock_ns(libc::CLOCK_MONOTONIC) as f64 / 1e9 * cpus);
    let mut ctx = Ctx::new(py, &snap, &attrs)?;
    ctx.complete_names(py, &snap, &attrs, true)?;
    ctx.load_threads(py, &attrs, backend, None)?;
    let mut tasks = snap.tasks;
    tasks.retain(|t| t.id.is_leader());
    // A process found gone by a read beyond the pass is left out, as psutil's loop skips
    // one that raises NoSuchProcess.
    ctx.read_per_task(&tasks, &attrs)?;
    tasks.retain(|t| !ctx.gone(t.id.tgid));
    let cpu_last = PyString::intern(py, "_cpu_last");
    let [pid_attr, start_attr, name_attr, info_attr] =
        ["_pid", "_start_ns", "_name", "_info"].map(|n| PyString::intern(py, n));
    let name_key = attrs
        .iter()
        .position(|a| *a == Attr::Name)
        .map(|i| keys[i].clone());
    let new = ObjectNew::of(&cls)?;
    let none = py.None().into_bound(py);
    let _paused = GcPaused::new(py)?;
    let seen = PyDict::new(py);
    let mut out = Vec::with_capacity(tasks.len());
    for t in &tasks {
        let pid = t.id.tgid.into_pyobject(py)?;
        // The same process: same pid and start time; a reused pid is a new Process.
        let same = match cache.get_item(&pid)? {
            Some(p) if same_process(&p, t)? => Some(p),
            _ => None,
        };
        let p = match same {
            Some(p) => p,
            None => {
                let p = new.call(py, &cls)?;
                p.setattr(&pid_attr, &pid)?;
                p.setattr(&start_attr, t.id.start_time_ns)?;
                p.setattr(&name_attr, &none)?;
                p
            }
        };
        // psutil's cpu_percent since this object's last call (a new object: its first call,
        // 0.0), then this pass's figures kept for the next one.
        if let (Some(timer_s), Some(st)) = (timer_s, &t.stat) {
            let proc_s = cpu_ticks_s(st);
            let last = p.getattr(&cpu_last).ok();
            let pct = match last.and_then(|v| v.extract::<(f64, f64)>().ok()) {
                Some((st1, pt1)) => cpu_percent(proc_s - pt1, timer_s - st1, cpus),
                None => 0.0,
            };
            ctx.cpu_percent.insert(t.id.tgid, pct);
            p.setattr(&cpu_last, (timer_s, proc_s))?;
        }
        let info = PyDict::new(py);
        if with_info {
            for (a, k) in attrs.iter().zip(&keys) {
                match ctx.value(py, *a, t)? {
                    Ok(v) => info.set_item(k, v)?,
                    Err(_) => info.set_item(k, &ad_value)?,
                }
            }
            if let Some(k) = &name_key {
                if let Some(n) = info.get_item(k)? {
                    p.setattr(&name_attr, n)?;
                }
            }
        }
        p.setattr(&info_attr, info)?;
        seen.set_item(pid, &p)?;
        out.push(p);
    }
    cache.clear();
    cache.update(seen.as_mapping())?;
    PyList::new(py, out)
}

/// Whether the cached `Process` `p` is `t`'s process: same start time (in clock ticks, so
/// that a pass of the other backend agrees); a reused pid is another process, as in psutil.
fn same_process(p: &Bound<'_, PyAny>, t: &Task) -> PyResult<bool> {
    let start: Option<u64> = p.getattr("_start_ns").ok().and_then(|v| v.extract().ok());
    Ok(start.is_some_and(|ns| host::start_ticks(ns) == host::start_ticks(t.id.start_time_ns)))
}

/// A process's user + system CPU seconds as psutil counts them: each in whole clock ticks
/// (/proc's unit), so that a pass of either backend (the BPF one has nanoseconds) gives the
/// same figure, and `cpu_percent` does not jump when `auto` changes backend between calls.
fn cpu_ticks_s(st: &tasksnap_model::Stat) -> f64 {
    let ticks = host::ns_to_ticks(st.utime_ns).saturating_add(host::ns_to_ticks(st.stime_ns));
    ticks as f64 / host::clk_tck() as f64
}

/// `object.__new__(cls)` for a plain class (`Process`): its `tp_alloc` called directly,
/// which is all `object.__new__` does for a class that is not abstract, given no arguments;
/// or, for any other class, the call itself.
struct ObjectNew(Option<pyo3::ffi::allocfunc>);

impl ObjectNew {
    fn of(cls: &Bound<'_, PyType>) -> PyResult<ObjectNew> {
        let py = cls.py();
        let object = py.get_type::<PyAny>();
        const HEAPTYPE: u64 = 1 << 9; // Py_TPFLAGS_HEAPTYPE
        const ABSTRACT: u64 = 1 << 20; // Py_TPFLAGS_IS_ABSTRACT
        let flags: u64 = cls.getattr("__flags__")?.extract()?;
        let plain = flags & HEAPTYPE != 0
            && flags & ABSTRACT == 0
            && cls.getattr("__new__")?.is(object.getattr("__new__")?)
            && cls.is_subclass(&object)?;
        if !plain {
            return Ok(ObjectNew(None));
        }
        // SAFETY: `cls` is a live heap type (checked above), for which PyType_GetSlot is
        // defined in every Python of the stable ABI; it returns the tp_alloc function (or
        // NULL), which has the allocfunc signature, and Option<fn> is how a nullable
        // function pointer is represented.
        let alloc = unsafe {
            let p = pyo3::ffi::PyType_GetSlot(cls.as_ptr().cast(), pyo3::ffi::Py_tp_alloc);
            std::mem::transmute::<*mut std::ffi::c_void, Option<pyo3::ffi::allocfunc>>(p)
        };
        Ok(ObjectNew(alloc))
    }

    fn call<'py>(&self, py: Python<'py>, cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
        let Some(alloc) = self.0 else {
            return py.get_type::<PyAny>().call_method1("__new__", (cls,));
        };
        // SAFETY: `alloc` is `cls`'s own tp_alloc (ObjectNew::of, same class): called with
        // the type and 0 items it returns a new reference to a zeroed instance (its slots
        // empty, as object.__new__ leaves them) or NULL with an exception set.
        unsafe {
            let obj = alloc(cls.as_ptr().cast(), 0);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, obj))
        }
    }
}
