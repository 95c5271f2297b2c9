"""A warm runner: ``python -m module`` / ``python -c code`` child processes that skip the start-up.

A ``mosnav-eval`` started as a fresh interpreter spends about 4 s importing habitat (torch
comes with habitat-sim's noise models) before it reads its first flag; the hostile-input and
signal tests start such commands by the dozen. This module's server imports what those
commands import once, then forks one child per request. The child is a real process of its
own, as a fresh interpreter would be: its own pid, standard streams, working directory,
environment, ``argv``, resource limits (``rlimits``, applied in the child before it runs),
signal dispositions (Python's SIGINT handler, every other one at its default) and exit
status (``sys.exit`` codes, 1 and a traceback for an uncaught exception, death by SIGINT for
an uncaught KeyboardInterrupt, as CPython does). What it does not exercise is the start-up
itself: tests of the installed entry points and of import time keep ``subprocess``.

Use :func:`popen` / :func:`run` where a test would call ``subprocess.Popen`` / ``run`` with
``[sys.executable, "-m", ...]`` or ``[sys.executable, "-c", ...]``; any other argv goes to
``subprocess`` unchanged. Set ``MOSNAV_TEST_COLD=1`` to send every call to ``subprocess``
(the same tests, fresh interpreters).

Protocol: the test process holds one Unix socket per child; it sends the request (JSON) with
the three standard-stream descriptors (``SCM_RIGHTS``); the server forks a *waiter* that
forks the child, sends back ``{"pid": ...}``, waits for it and sends ``{"status": ...}``.
"""

from __future__ import annotations

import array
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

#: what the server imports before it serves (what the commands under test import)
PRELOAD = (
    "habitat",
    "habitat_mosnav",
    "habitat_mosnav.evaluation.cli",
    "habitat_mosnav.evaluation.replay_cli",
    "habitat_mosnav.evaluation.report",
    "habitat_mosnav.evaluation.aggregate_cli",
    "habitat_mosnav.dataset_building.cli",
    "habitat_mosnav.sims",
)

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
TimeoutExpired = subprocess.TimeoutExpired
CompletedProcess = subprocess.CompletedProcess


# ----------------------------------------------------------------------------- the server side
def _recv_request(conn):
    fds = array.array("i")
    data, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    return json.loads(data.decode()), list(fds)


def _send(conn, obj):
    conn.sendall(json.dumps(obj).encode() + b"\n")


def _child(request, fds):
    """Become the requested process; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for name, (soft, hard) in request["rlimits"].items():
            import resource

            resource.setrlimit(getattr(resource, name), (soft, hard))
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.stdin = open(0, closefd=False, encoding="utf-8")
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        mode, what, args = request["mode"], request["what"], request["args"]
        sys.path[:] = [os.getcwd() if mode == "-m" else ""] + extra + sys.path[1:]
        try:
            if mode == "-m":
                import runpy

                sys.argv = [what] + args
                sys.modules.pop(what, None)  # preloaded: run it afresh as __main__, as -m does
                runpy.run_module(what, run_name="__main__", alter_sys=True)
            else:
                import types

                sys.argv = [request.get("argv0") or "-c"] + args
                main = types.ModuleType("__main__")
                main.__builtins__ = __builtins__
                sys.modules["__main__"] = main
                exec(compile(what, "<string>", "exec"), main.__dict__)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            import traceback

            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        try:
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
    finally:
        if code == -signal.SIGINT:  # CPython dies by SIGINT on an uncaught KeyboardInterrupt
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code)


def _wait_and_report(conn, request, fds):
    """The waiter: fork the child, report its pid, wait for it, report its status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _child(request, fds)
    for fd in fds:
        os.close(fd)
    _send(conn, {"pid": pid})
    _, status = os.waitpid(pid, 0)  # retried on EINTR by Python itself (PEP 475)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    _send(conn, {"status": code})
    os._exit(0)


def serve(listener):
    for name in PRELOAD:
        __import__(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # waiters are reaped by the kernel
    sys.stdout.write("\nready\n")
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.close(null)
    while True:
        conn, _ = listener.accept()
        try:
            request, fds = _recv_request(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _wait_and_report(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


# ----------------------------------------------------------------------------- the test side
class _Server:
    """One server per test process (per xdist worker), started at first use."""

    def __init__(self):
        self.proc = None
        self.path = None
        self.lock = threading.Lock()

    def address(self):
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            return self.path

    def _start(self):
        import tempfile

        import habitat_mosnav

        folder = tempfile.mkdtemp(prefix="mosnav-warm-")
        self.path = os.path.join(folder, "socket")
        src = os.path.dirname(os.path.dirname(os.path.abspath(habitat_mosnav.__file__)))
        env = dict(os.environ, PYTHONPATH=src)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), self.path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for line in self.proc.stdout:  # what the imports print, then "ready"
            if line.strip() == "ready":
                break
        else:
            raise RuntimeError(f"the warm runner did not start (exit {self.proc.wait()})")
        self.proc.stdout.close()
        atexit.register(self.stop)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


_SERVER = _Server()


def _warm(argv):
    return (
        os.environ.get("MOSNAV_TEST_COLD") != "1"
        and len(argv) >= 3
        and argv[0] == sys.executable
        and argv[1] in ("-m", "-c")
    )


class WarmProcess:
    """The part of ``subprocess.Popen`` the tests use, for a child of the warm runner."""

    def __init__(
        self,
        argv,
        stdin=None,
        stdout=None,
        stderr=None,
        cwd=None,
        env=None,
        text=False,
        rlimits=None,
    ):
        self.args = list(argv)
        self.returncode = None
        self._text = text
        ours, theirs = [], []

        def stream(spec, fd, mode):
            if spec is None:
                return fd, None
            if spec == DEVNULL:
                null = os.open(os.devnull, os.O_RDWR)
                ours.append(null)
                return null, None
            if spec == PIPE:
                r, w = os.pipe()
                mine, child = (w, r) if mode == "w" else (r, w)
                theirs.append(child)
                return child, os.fdopen(mine, mode + ("" if text else "b"))
            if isinstance(spec, int):
                return spec, None
            return spec.fileno(), None

        in_fd, self.stdin = stream(stdin, 0, "w")
        out_fd, self.stdout = stream(stdout, 1, "r")
        err_fd, self.stderr = stream(stderr, 2, "r")
        request = {
            "mode": argv[1],
            "what": argv[2],
            "args": [str(a) for a in argv[3:]],
            "cwd": os.path.abspath(str(cwd) if cwd is not None else os.getcwd()),
            "env": dict(os.environ if env is None else env),
            "rlimits": {k: list(v) for k, v in (rlimits or {}).items()},
        }
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._conn.connect(_SERVER.address())
            payload = json.dumps(request).encode()
            fds = array.array("i", [in_fd, out_fd, err_fd])
            self._conn.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            self._buffer = b""
            self.pid = self._message()["pid"]
        finally:
            for fd in ours + theirs:
                os.close(fd)

    def _message(self, timeout=None):
        self._conn.settimeout(timeout)
        while b"\n" not in self._buffer:
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError("the warm runner's waiter went away")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def poll(self):
        if self.returncode is None:
            try:
                self.returncode = self._message(timeout=0)["status"]
            except (BlockingIOError, socket.timeout):
                return None
            self._conn.close()
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            try:
                self.returncode = self._message(timeout=timeout)["status"]
            except socket.timeout:
                raise TimeoutExpired(self.args, timeout) from None
            self._conn.close()
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def communicate(self, input=None, timeout=None):
        results = {}

        def drain(name, f):
            results[name] = f.read()
            f.close()

        threads = [
            threading.Thread(target=drain, args=(name, f), daemon=True)
            for name, f in (("out", self.stdout), ("err", self.stderr))
            if f is not None
        ]
        for t in threads:
            t.start()
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in threads:
            t.join(None if deadline is None else max(0, deadline - time.monotonic()))
            if t.is_alive():
                raise TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.1, deadline - time.monotonic()))
        return results.get("out"), results.get("err")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None and not f.closed:
                f.close()
        self.wait()


def popen(argv, rlimits=None, **kwargs):
    """``subprocess.Popen(argv, **kwargs)``, warm where it can be. ``rlimits``:
    ``{"RLIMIT_AS": (soft, hard)}``, set in the child before it runs (a warm child has no
    ``preexec_fn``)."""
    if not _warm(argv):
        if rlimits:
            import resource

            def preexec():
                for name, pair in rlimits.items():
                    resource.setrlimit(getattr(resource, name), pair)

            kwargs["preexec_fn"] = preexec
        return subprocess.Popen(argv, **kwargs)
    return WarmProcess(argv, rlimits=rlimits, **kwargs)


def run(argv, capture_output=False, timeout=None, check=False, input=None, **kwargs):
    """``subprocess.run`` through :func:`popen`."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = PIPE
    if input is not None:
        kwargs["stdin"] = PIPE
    proc = popen(argv, **kwargs)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except TimeoutExpired:
        proc.kill()
        proc.wait()
        raise
    result = CompletedProcess(proc.args, proc.returncode, out, err)
    if check:
        result.check_returncode()
    return result


# ----------------------------------------------------------------------------- commands on PATH
#: a console script run by a warm child: the entry point, called as its generated script does
_ENTRY = "import sys\nfrom {module} import {attr} as main\nsys.exit(main())\n"


def _client(address, name, entry, args):
    """A console script's stand-in (see :func:`command_shims`): its own standard streams,
    directory and environment handed to a warm child; SIGINT/SIGTERM passed on to it; its
    exit status (or the signal that ended it) is this process's."""
    module, attr = entry.split(":")
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(address)
    request = {
        "mode": "-c",
        "what": _ENTRY.format(module=module, attr=attr),
        "argv0": name,
        "args": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "rlimits": {},
    }
    fds = array.array("i", [0, 1, 2])
    conn.sendmsg([json.dumps(request).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    reader = conn.makefile("rb")
    pid = json.loads(reader.readline())["pid"]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(pid, signum))
    status = json.loads(reader.readline())["status"]  # EINTR is retried (PEP 475)
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


def command_shims(folder):
    """Write into ``folder`` one stand-in per console script of habitat_mosnav (mosnav-eval,
    mosnav-report, ...) that runs it as a warm child; put ``folder`` first on a shell's PATH.
    With ``MOSNAV_TEST_COLD=1``, none is written (PATH finds the installed scripts)."""
    import importlib.metadata as md

    if os.environ.get("MOSNAV_TEST_COLD") == "1":
        return folder
    os.makedirs(folder, exist_ok=True)
    address = _SERVER.address()
    for ep in md.distribution("habitat_mosnav").entry_points:
        if ep.group != "console_scripts":
            continue
        path = os.path.join(folder, ep.name)
        with open(path, "w") as f:
            f.write(
                f"#!/bin/sh\nexec {sys.executable} -I {os.path.abspath(__file__)} "
                f'--client {address} {ep.name} {ep.value} "$@"\n'
            )
        os.chmod(path, 0o755)
    return folder


if __name__ == "__main__":
    if sys.argv[1] == "--client":
        _client(*sys.argv[2:5], sys.argv[5:])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sys.argv[1])
    sock.listen(64)
    serve(sock)
