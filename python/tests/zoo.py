"""The processes the differential test compares psutil and tasksnap on, one of each shape
psutil's users meet: started by `python zoo.py`, which prints {role: pid} as one JSON line
once every one is ready, and keeps them until its stdin closes (the test then kills the
whole process group with SIGKILL).

Roles: `plain` (a sleeper of the caller's), `files` (open files at known offsets, a deleted
file, a file whose name has a newline, TCP listening and connected sockets on IPv4 and
IPv6, UDP, a bound unix socket, a mapped file, its own working directory), `threads`,
`nondumpable` (PR_SET_DUMPABLE 0: its files closed to its own user too), `zombie` (exited,
not reaped), `niced` (nice 5, on CPU 0 only, an odd environment and rlimits), and, when the
caller is root, `nobody` (another user's process with files and a socket of its own).
"""

import ctypes
import json
import mmap
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

NOBODY = 65534


def hold_files(workdir):
    """Opens what `files` shows and returns the objects (kept alive by the caller)."""
    os.chdir(workdir)
    keep = []
    data = open(os.path.join(workdir, "data.bin"), "wb+")
    data.write(b"x" * 8192)
    data.flush()
    data.seek(42)
    keep.append(data)
    log = open(os.path.join(workdir, "log.txt"), "a")
    log.write("line\n")
    log.flush()
    keep.append(log)
    odd = open(os.path.join(workdir, "new\nline name"), "w")
    keep.append(odd)
    gone = open(os.path.join(workdir, "deleted.txt"), "w")
    os.unlink(os.path.join(workdir, "deleted.txt"))
    keep.append(gone)
    keep.append(mmap.mmap(data.fileno(), 8192))
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen()
    cli = socket.create_connection(lst.getsockname())
    srv, _ = lst.accept()
    keep += [lst, cli, srv]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    keep.append(udp)
    try:
        six = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        six.bind(("::1", 0))
        six.listen()
        keep.append(six)
    except OSError:
        pass  # no IPv6 here
    ux = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ux.bind(os.path.join(workdir, "sock"))
    ux.listen()
    keep.append(ux)
    return keep


def child(role, workdir, ready_w):
    """Runs in a forked child: becomes `role`, says so on the pipe, sleeps."""
    keep = []
    if role == "files":
        keep = hold_files(workdir)
    elif role == "threads":
        for _ in range(3):
            threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
    elif role == "nondumpable":
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_DUMPABLE = 4
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")
    elif role == "niced":
        os.setpriority(os.PRIO_PROCESS, 0, 5)
        os.sched_setaffinity(0, {0})
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 512))
        os.environ.clear()
        os.environ.update({"A": "1", "EMPTY": "", "WITH_EQ": "x=y"})
        os.environb[b"BYTES"] = b"\xff\xfe"
        # A fresh image, so that /proc/PID/environ is this environment.
        os.set_inheritable(ready_w, True)
        os.execve(sys.executable, [sys.executable, "-c",
                  "import os, time; os.write(int(os.environ['READY']), b'.'); time.sleep(3600)"],
                  dict(os.environb, READY=str(ready_w).encode()))
    elif role == "nobody":
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        # A fresh image: a process that changed its ids stays non-dumpable (its /proc files
        # root's) until it executes a program.
        os.set_inheritable(ready_w, True)
        # An interpreter nobody may run (this one may live under a 0700 home).
        python = next(p for p in (sys.executable, os.path.realpath(sys.executable),
                                  "/usr/bin/python3", "/usr/local/bin/python3")
                      if os.access(p, os.X_OK))
        os.execve(python, [python, "-c",
                  "import os, socket, time\n"
                  "keep = [open('/dev/null'), socket.socket(socket.AF_INET, socket.SOCK_DGRAM)]\n"
                  "keep[1].bind(('127.0.0.1', 0))\n"
                  "os.write(int(os.environ['READY']), b'.'); time.sleep(3600)"],
                  dict(os.environ, READY=str(ready_w)))
    elif role == "zombie":
        os._exit(7)
    os.write(ready_w, b".")
    while True:
        time.sleep(3600)


def main():
    roles = ["plain", "files", "threads", "nondumpable", "zombie", "niced"]
    if os.geteuid() == 0:
        roles.append("nobody")
    workdir = tempfile.mkdtemp(prefix="tasksnap-zoo-")
    os.chmod(workdir, 0o755)
    pids = {}
    try:
        for role in roles:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    child(role, workdir, w)
                finally:
                    os._exit(1)
            os.close(w)
            if role == "zombie":
                # It exits at once; never reaped while the zoo lives.
                while open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                    time.sleep(0.01)
            elif os.read(r, 1) != b".":
                raise SystemExit(f"zoo: {role} did not start")
            os.close(r)
            pids[role] = pid
        pids["workdir"] = workdir
        sys.stdout.write(json.dumps(pids) + "\n")
        sys.stdout.flush()
        sys.stdin.read()
    finally:
        for role, pid in pids.items():
            if role != "workdir":
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
