"""The wheel `./x wheel` builds, as a user without Rust gets it: built into a temporary
directory, checked (abi3, manylinux-tagged by auditwheel, stripped, its libraries inside it),
installed offline with pip into a fresh virtualenv whose PATH has no cargo, rustc or maturin,
then imported from there: the module loaded must be the wheel's (nothing mapped from the
build tree) and must answer for the process that imports it."""

import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

import build

REPO = Path(__file__).resolve().parents[2]

# What the installed wheel must do, run by the fresh virtualenv's Python under a name of our
# own (a link to it, so the kernel's comm, and hence name(), is that name).
CHECKS = textwrap.dedent(
    """
    import json, os, sys, sysconfig
    import tasksnap
    name, build_dirs = sys.argv[1], sys.argv[2:]
    site = os.path.realpath(sysconfig.get_paths()["platlib"]) + os.sep
    ext = os.path.realpath(tasksnap._tasksnap.__file__)
    assert ext.startswith(site), (ext, site)
    # Every file mapped into this process: the extension and the libraries it pulled in come
    # from the virtualenv or the system, none from the build tree (the checkout and the
    # target directory, wherever that is).
    with open("/proc/self/maps") as f:
        mapped = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    mapped = {p for p in mapped if p.startswith("/")}
    assert not [p for p in mapped for d in build_dirs if p.startswith(d + os.sep)], sorted(mapped)
    assert ext in mapped, (ext, sorted(mapped))
    me = os.getpid()
    names = {p.info["pid"]: p.info["name"] for p in tasksnap.process_iter(["pid", "name"])}
    report = tasksnap.last_report()
    assert names.get(me) == name, (me, names.get(me))
    assert os.getppid() in names, os.getppid()
    own = tasksnap.Process()
    assert own.pid == me and own.name() == name, (own.pid, own.name())
    print(json.dumps({"backend": report.backend, "mapped": sorted(mapped)}))
    """
)


def _run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{argv[0]} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def _elf_sections(data):
    """The section names of a 64-bit little-endian ELF file (the only kind this wheel holds)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, data[:6]
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    strtab = data[strtab_off:strtab_off + strtab_size]
    return {strtab[h[0]:strtab.index(b"\0", h[0])].decode() for h in headers}


def _built_by_x(where):
    """What `./x wheel` printed and built, run by `./x test` into `where` beforehand (in the
    background while the Rust tests ran): its stdout, its exit status, the wheels there."""
    where = Path(where)
    status = (where / "status").read_text().strip()
    assert status == "0", f"./x wheel exited {status}:\n{(where / 'stderr').read_text()}"
    return (where / "stdout").read_text(), sorted((where / "out").glob("*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if os.environ.get("TASKSNAP_TEST_WHEEL_DIR"):
        stdout, built = _built_by_x(os.environ["TASKSNAP_TEST_WHEEL_DIR"])
    else:
        out = tmp_path_factory.mktemp("wheels")
        stdout = _run([str(REPO / "x"), "wheel", str(out)], cwd=REPO, timeout=3600).stdout
        built = sorted(out.glob("*.whl"))
    assert len(built) == 1, built
    assert stdout.strip().splitlines()[-1] == str(built[0]), stdout
    return built[0]


def test_wheel_is_abi3_manylinux_stripped_and_self_contained(wheel):
    # One wheel for CPython 3.9 and later (pyo3's abi3-py39), tagged manylinux by auditwheel.
    m = re.fullmatch(
        rf"tasksnap-[0-9.]+-cp39-abi3-manylinux_2_(\d+)_{re.escape(platform.machine())}\.whl",
        wheel.name,
    )
    assert m, wheel.name
    auditwheel = Path(build.target_dir()) / "wheel-tools" / "bin" / "auditwheel"
    shown = _run([str(auditwheel), "show", str(wheel)]).stdout
    assert f'platform tag: "manylinux_2_{m.group(1)}_' in " ".join(shown.split()), shown
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        exts = [n for n in names if re.fullmatch(r"tasksnap/_tasksnap\.abi3\.so", n)]
        assert exts, names
        sections = _elf_sections(z.read(exts[0]))
        # Stripped: no symbol table, no debug information.
        assert ".symtab" not in sections and not any(s.startswith(".debug") for s in sections), (
            sorted(sections))
        # libbpf needs libelf, which no manylinux policy promises: auditwheel copied it in.
        assert any(re.fullmatch(r"tasksnap\.libs/libelf-[^/]+\.so[.0-9]*", n) for n in names), names


def test_wheel_installs_and_imports_without_rust(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=600)
    bindir = venv / "bin"
    # A PATH with the virtualenv and an empty directory only: no cargo, rustc or maturin.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path = os.pathsep.join([str(bindir), str(empty)])
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=path) is None, tool
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("CARGO", "RUSTUP", "RUSTC", "PYTHON", "PIP_", "VIRTUAL_ENV"))
    }
    env["PATH"] = path
    env["HOME"] = str(tmp_path)
    # Offline: the wheel and nothing else.
    _run([str(bindir / "pip"), "install", "--quiet", "--disable-pip-version-check", "--no-index",
          "--only-binary", ":all:", str(wheel)], env=env, cwd=tmp_path, timeout=600)
    name = "wheel-check"  # under the kernel's 15 bytes: comm is the whole name
    (bindir / name).symlink_to(bindir / "python")
    run = [str(bindir / name), "-I", "-c", CHECKS, name, str(REPO), build.target_dir()]
    out = json.loads(_run(run, env={**env, "TASKSNAP_BACKEND": "procfs"}, cwd=tmp_path,
                          timeout=600).stdout)
    assert out["backend"] == "procfs", out
    site = str(venv.resolve())
    # libelf came from the wheel's own copy.
    assert any(p.startswith(site) and "/tasksnap.libs/libelf-" in p for p in out["mapped"]), out
    # As root the BPF backend, which needs that libelf to open its programs, runs from the
    # wheel too.
    if os.geteuid() == 0:
        r = subprocess.run(run, env={**env, "TASKSNAP_BACKEND": "bpf"}, cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 and os.environ.get("TASKSNAP_REQUIRE_PRIVILEGED") != "1":
            pytest.skip(f"the BPF backend does not load here:\n{r.stderr}")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["backend"] == "bpf", r.stdout
