"""A Spark standalone cluster on this machine, from the pip-installed PySpark: one master and one worker, loopback
only.

    python3 scripts/cluster.py start [--workdir DIR] [--cores 1] [--memory 2g] [--timeout 120]
    python3 scripts/cluster.py status [--workdir DIR]
    python3 scripts/cluster.py stop [--workdir DIR]

``start`` runs ``<pyspark>/bin/spark-class org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` (each in
its own process group, with ``SPARK_LOCAL_IP=127.0.0.1``), logs each to ``DIR/logs``, waits until the master's web
UI (``/json/``) lists the worker as ALIVE, writes the PIDs, ports and master URL to ``DIR/cluster.json`` and prints
the master URL (``spark://127.0.0.1:PORT``). ``stop`` sends SIGTERM to the process groups in the state file (the
worker's executors are in the worker's group), SIGKILL after a grace period, and waits until no process of them is
left. ``status`` prints the state and whether the processes and the worker are alive (exit status 1 if not).

From Python (tests/test_cluster.py)::

    with standalone_cluster(workdir) as master_url:
        ...  # rspark replay ... --master master_url

The cluster is stopped when the block ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"  # loopback only: the master, the worker, their web UIs and the executors bind here
STATE_FILE = "cluster.json"
DEFAULT_WORKDIR = Path(tempfile.gettempdir()) / "rspark-cluster"


class ClusterError(RuntimeError):
    """The cluster did not start (or stop) as asked; the message says why and where the logs are."""


def spark_home() -> Path:
    """The pip-installed PySpark's directory: it holds Spark's jars and ``bin/spark-class``."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise ClusterError(f"{home} has no bin/spark-class or jars/: not a full PySpark installation")
    return home


def free_port() -> int:
    """A TCP port free on the loopback interface now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _environment(workdir: Path, rest_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        # the master's REST submission server (spark-submit --deploy-mode cluster) is on by default, on port 6066
        # whoever holds it: a free port of its own, so two clusters (two test runs) do not collide
        "SPARK_MASTER_OPTS": f"{os.environ.get('SPARK_MASTER_OPTS', '')} -Dspark.master.rest.port={rest_port}".strip(),
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": HOST,  # the daemons, their web UIs (else 0.0.0.0) and the executors bind to loopback
        "SPARK_LOCAL_HOSTNAME": HOST,
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_WORKER_DIR": str(workdir / "work"),  # the executors' working directories and logs
        "SPARK_DAEMON_MEMORY": os.environ.get("SPARK_DAEMON_MEMORY", "512m"),  # master's and worker's heap
    })
    env.pop("SPARK_CONF_DIR", None)  # Spark's defaults, not a configuration found elsewhere
    return env


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group ``pgid``."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _is_spark(pid: int) -> bool:
    try:
        return b"org.apache.spark" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: trust the state file
        return alive(pid)


def leftover(pids: dict[str, int]) -> list[int]:
    """The live processes of the cluster of ``pids`` (a state's "pids"): the daemons and everything left in their
    process groups (the worker's executors)."""
    return sorted({pid for pgid in pids.values() for pid in [pgid, *group_members(pgid)] if alive(pid)})


def _master_json(webui_port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{webui_port}/json/", timeout=5) as response:
            return json.load(response)
    except (OSError, ValueError, urllib.error.URLError):
        return None


def alive_workers(webui_port: int) -> int | None:
    """The number of ALIVE workers the master's web UI lists; None when the UI does not answer."""
    status = _master_json(webui_port)
    if status is None:
        return None
    return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} unreadable)"
    return "\n".join(text[-lines:])


def read_state(workdir: Path | str) -> dict:
    path = Path(workdir) / STATE_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterError(f"no cluster state in {path} (not started, or stopped)") from None


def _write_state(workdir: Path, state: dict) -> None:
    path = workdir / STATE_FILE
    path.with_suffix(".part").write_text(json.dumps(state, indent=2) + "\n")
    os.replace(path.with_suffix(".part"), path)


def _launch(args: list[str], log: Path, env: dict[str, str], workdir: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        # a new session, so a new process group: stop() signals the daemon together with what it started
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                start_new_session=True)


def start(workdir: Path | str = DEFAULT_WORKDIR, *, cores: int = 1, memory: str = "2g",
          timeout: float = 120.0) -> dict:
    """Start a master and one worker, wait until the worker is registered, write and return the state.
    Raises :class:`ClusterError` (after stopping whatever it started) when that does not happen in ``timeout``
    seconds."""
    workdir = Path(workdir).resolve()
    if (workdir / STATE_FILE).exists():
        state = read_state(workdir)
        if any(alive(pid) for pid in state["pids"].values()):
            raise ClusterError(f"a cluster of {workdir / STATE_FILE} is running ({state['master_url']}): stop it "
                               "first")
        (workdir / STATE_FILE).unlink()
    for sub in ("logs", "work"):
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    port, webui, worker_webui, rest = free_port(), free_port(), free_port(), free_port()
    env = _environment(workdir, rest)
    master_url = f"spark://{HOST}:{port}"
    logs = {"master": workdir / "logs" / "master.log", "worker": workdir / "logs" / "worker.log"}
    state = {"master_url": master_url, "port": port, "webui_port": webui, "worker_webui_port": worker_webui,
             "rest_port": rest, "workdir": str(workdir), "logs": {k: str(v) for k, v in logs.items()}, "pids": {}}
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["master"] = _launch(["org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                                   "--webui-port", str(webui)], logs["master"], env, workdir)
        state["pids"]["master"] = procs["master"].pid
        _write_state(workdir, state)  # from now on, stop() finds what to stop
        deadline = time.monotonic() + timeout
        _wait(lambda: alive_workers(webui) is not None, procs, logs, deadline, "the master's web UI to answer")
        procs["worker"] = _launch(["org.apache.spark.deploy.worker.Worker", master_url, "--host", HOST,
                                   "--cores", str(cores), "--memory", memory, "--webui-port", str(worker_webui),
                                   "--work-dir", str(workdir / "work")], logs["worker"], env, workdir)
        state["pids"]["worker"] = procs["worker"].pid
        _write_state(workdir, state)
        _wait(lambda: (alive_workers(webui) or 0) >= 1, procs, logs, deadline,
              "the worker to register with the master")
    except BaseException:
        _stop_pids(state["pids"], procs)
        (workdir / STATE_FILE).unlink(missing_ok=True)
        raise
    state["_procs"] = procs  # not written: lets stop() in this process reap its children
    return state


def _wait(ready, procs: dict[str, subprocess.Popen], logs: dict[str, Path], deadline: float, what: str) -> None:
    while not ready():
        for name, proc in procs.items():
            if proc.poll() is not None:
                raise ClusterError(f"the {name} exited with status {proc.returncode} while waiting for {what}; "
                                   f"the end of {logs[name]}:\n{_tail(logs[name])}")
        if time.monotonic() > deadline:
            raise ClusterError(f"timed out waiting for {what}; the ends of the logs:\n"
                               + "\n".join(f"--- {logs[n]}\n{_tail(logs[n])}" for n in procs))
        time.sleep(0.5)


def _stop_pids(pids: dict[str, int], procs: dict[str, subprocess.Popen] | None = None,
               grace: float = 30.0) -> list[int]:
    """SIGTERM to each process group (the worker first, then the master), SIGKILL to what is left after
    ``grace`` seconds; returns the processes still alive at the end (none, normally)."""
    procs = procs or {}
    groups = [pids[name] for name in ("worker", "master") if name in pids]  # each is its group's leader

    def remaining() -> list[int]:
        for proc in procs.values():
            proc.poll()  # reap our own children, so they do not linger as zombies
        return leftover(pids)

    # a state file read long after: signal only groups that still hold a Spark process (not a reused PID's)
    groups = [pgid for pgid in groups if any(_is_spark(pid) for pid in [pgid, *group_members(pgid)])]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while remaining() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not remaining():
            return []
    return remaining()


def stop(workdir: Path | str = DEFAULT_WORKDIR, state: dict | None = None) -> None:
    """Stop the cluster of ``workdir`` (its state file, or ``state`` as :func:`start` returned it) and wait until
    its processes have exited. Raises :class:`ClusterError` if some are still alive after SIGKILL."""
    workdir = Path(workdir).resolve()
    state = state if state is not None else read_state(workdir)
    left = _stop_pids(state["pids"], state.get("_procs"))
    if left:
        raise ClusterError(f"processes {left} of the cluster are still alive after SIGKILL")
    (workdir / STATE_FILE).unlink(missing_ok=True)


def status(workdir: Path | str = DEFAULT_WORKDIR) -> tuple[bool, str]:
    state = read_state(workdir)
    running = {name: alive(pid) for name, pid in state["pids"].items()}
    workers = alive_workers(state["webui_port"])
    lines = [f"master URL     {state['master_url']}",
             f"master web UI  http://{HOST}:{state['webui_port']}/",
             *(f"{name:<14} pid {pid} {'alive' if running[name] else 'NOT RUNNING'}"
               for name, pid in state["pids"].items()),
             f"alive workers  {'(master UI not answering)' if workers is None else workers}",
             f"logs           {Path(state['logs']['master']).parent}"]
    return all(running.values()) and bool(workers), "\n".join(lines)


@contextmanager
def standalone_cluster(workdir: Path | str, *, cores: int = 1, memory: str = "2g",
                       timeout: float = 120.0) -> Iterator[str]:
    """A started cluster's master URL for the block; stopped (processes gone) when the block ends. The PIDs are
    in ``read_state(workdir)`` while it runs."""
    state = start(workdir, cores=cores, memory=memory, timeout=timeout)
    try:
        yield state["master_url"]
    finally:
        stop(workdir, state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                        help=f"state file, logs and the worker's directory (default {DEFAULT_WORKDIR})")
    parser.add_argument("--cores", type=int, default=1, help="the worker's cores (default 1)")
    parser.add_argument("--memory", default="2g", help="the worker's memory for executors (default 2g)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for the worker to register (default 120)")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            state = start(args.workdir, cores=args.cores, memory=args.memory, timeout=args.timeout)
            print(state["master_url"])
            print(f"state: {Path(state['workdir']) / STATE_FILE}; logs: {Path(state['logs']['master']).parent}",
                  file=sys.stderr)
        elif args.command == "stop":
            stop(args.workdir)
            print("stopped", file=sys.stderr)
        else:
            ok, text = status(args.workdir)
            print(text)
            return 0 if ok else 1
    except ClusterError as exc:
        print(f"cluster.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
