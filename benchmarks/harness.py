"""The plumbing the benchmark scripts share: their common command-line arguments, the Spark settings of rspark's
session, worker subprocesses, memory samplers (peak RSS, current RSS, a JVM's heap) and PNG plots.

A script keeps only what it measures; the workloads it measures on are in :mod:`workloads`, the writing of its
section of ``RESULTS.md`` in :mod:`_results`, the baselines written here in :mod:`baselines`; a long script's own
parts (its workers, its server and clients, its report) in a package named after it (:mod:`cep`, :mod:`serve`).

Memory, all in MB (2**20 bytes), Linux's ``/proc`` where a process other than this one is read:

* :func:`peak_rss_mb`: this process's peak RSS (``ru_maxrss``), why each measured system runs in a worker
  subprocess of its own (:func:`run_worker`): its peak is then its own;
* :func:`proc_rss_mb` / :func:`proc_peak_mb`: another process's current RSS (``VmRSS``) / peak (``VmHWM``);
* :func:`jvm_pid`, :func:`jvm_heap_mb`, :func:`jvm_heap_after_gc_mb`: the session's JVM, read through py4j;
  :func:`java_descendant` and :func:`heap_after_gc_mb`: the JVM of another process (a server), through ``jcmd``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import _results

OUT = Path(__file__).resolve().parent / "out"

# ------------------------------------------------------------------------------------------------ arguments


def common_arguments(parser: argparse.ArgumentParser, name: str | None, *, conf: bool = True,
                     worker: Sequence[str] | bool = False) -> None:
    """The arguments every script takes: ``--out`` (the folder of its JSON and PNG files), ``--name`` (their
    name and the section of RESULTS.md; ``None``: the script names them itself), ``--conf KEY=VALUE`` (a Spark
    setting of rspark's session, repeatable), ``--no-results``, and the hidden ``--worker`` (the role of a worker
    subprocess: any name, or one of ``worker``'s)."""
    parser.add_argument("--out", default=str(OUT), help="folder of the JSON and PNG files written")
    if name is not None:
        parser.add_argument("--name", default=name,
                            help="name of the JSON and PNG files written, and of the section of RESULTS.md")
    if conf:
        parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                            help="a Spark setting for rspark's session (repeatable)")
    _results.add_argument(parser)
    if worker:
        choices = None if worker is True else list(worker)
        parser.add_argument("--worker", choices=choices, help=argparse.SUPPRESS)


def spark_settings(conf: Sequence[str], **defaults: str) -> dict[str, str]:
    """The Spark settings of rspark's session in a benchmark's process: the script's ``defaults`` (Spark keys, so
    passed as ``**{"spark.driver.memory": "8g"}``), then the ``--conf`` KEY=VALUE items on top."""
    settings = dict(defaults)
    settings.update(item.split("=", 1) for item in conf)
    return settings


def start_spark(spark) -> None:
    """The one-time cost of a benchmark's process, paid before the clock of what it measures starts: the JVM's
    first job, and Spark's Python workers started with rspark and pyoxigraph imported (the workers that parse RDF
    and evaluate event patterns)."""
    spark.range(1).count()

    def warm(batches):
        import pyoxigraph  # noqa: F401

        import rspark  # noqa: F401

        yield from batches

    spark.range(0, 4, 1, 2).mapInArrow(warm, "id long").count()


def scan_floor(spark, paths: Sequence[str]) -> dict:
    """The floor of loading the stream files ``paths`` in this session, the least any Spark plan that reads them
    takes on this machine: their lines read and cut into terms by rspark's data source (the first step of its
    load) and counted, nothing else, the files at once (as ``Engine.add_streams`` loads them); then once more,
    warm. ``scan_s``, ``scan_warm_s`` and ``lines`` (the lines read), or ``error`` when the data source is not
    there."""
    from concurrent.futures import ThreadPoolExecutor

    from pyspark.sql import functions as F

    from rspark.spark import jvm

    def scan(path: str) -> int | None:
        lines = jvm.lines_source(spark, str(Path(path).resolve()), quads=True, prefix="_:bfloor_")
        return None if lines is None else lines.agg(F.count("s"), F.count("g")).collect()[0][0]

    out: dict = {}
    for name in ("scan_s", "scan_warm_s"):
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=min(len(paths), 4)) as pool:
            counts = list(pool.map(scan, paths))
        out[name] = time.perf_counter() - start
        if None in counts:
            return {"error": "rspark's data source is not available (no JDK to build its jar)"}
        out["lines"] = sum(counts)
    return out


# ------------------------------------------------------------------------------------------------ workers


def run_worker(script: str | Path, args: Sequence[str]) -> dict:
    """Runs ``python SCRIPT ARGS`` (the script in its worker role) and returns the JSON object its last line of
    standard output holds; a failed worker ends the run with its standard error's tail."""
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"worker {' '.join(args[:2])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def worker_result(result: dict) -> None:
    """The last line of a worker's standard output: its result, read by :func:`run_worker`."""
    print(json.dumps(result), flush=True)


# ------------------------------------------------------------------------------------------------ memory


def peak_rss_mb() -> float:
    """This process's peak RSS (Linux reports ``ru_maxrss`` in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mb(pid, field_name: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def proc_rss_mb(pid) -> float | None:
    """The current RSS of process ``pid`` (``"self"``: this one); None when it is gone or not on Linux."""
    return _status_mb(pid, "VmRSS")


def proc_peak_mb(pid) -> float | None:
    """The peak RSS (``VmHWM``) of process ``pid`` since it started or since its peak was reset
    (:func:`reset_peak`)."""
    return _status_mb(pid, "VmHWM")


def reset_peak(pid) -> None:
    """Sets the peak RSS of ``pid`` back to its current RSS (Linux's ``clear_refs``); nothing if it is gone."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


def driver_rss_mb() -> float | None:
    """This process's current RSS (psutil when installed, else ``/proc``)."""
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:
        return proc_rss_mb("self")


def children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:  # the thread or the process ended meanwhile: no children to add
            pass
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def comm(pid: int) -> str:
    """The process's command name (``java``, ``python3``); "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def java_descendant(pid: int) -> int | None:
    """The JVM a process started (its first ``java`` descendant), e.g. the Spark JVM of an rspark server."""
    return next((child for child in descendants(pid) if comm(child) == "java"), None)


def jvm_pid(spark) -> int | None:
    """The process id of the session's JVM."""
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - only a figure of the report
        return None


def jvm_heap_mb(spark) -> float | None:
    """The heap the session's JVM uses now (total minus free)."""
    try:
        rt = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
        return (rt.totalMemory() - rt.freeMemory()) / 2**20
    except Exception:  # noqa: BLE001 - only a figure of the report
        return None


def jvm_heap_after_gc_mb(spark) -> float | None:
    """The heap the session's JVM still uses after a full collection (``System.gc()``; the throughput collector
    rspark's local sessions use runs one)."""
    try:
        spark.sparkContext._jvm.java.lang.System.gc()
    except Exception:  # noqa: BLE001 - only a figure of the report
        return None
    return jvm_heap_mb(spark)


def heap_after_gc_mb(pid: int | None) -> float | None:
    """The live heap of the JVM ``pid`` (another process): a full GC (``jcmd PID GC.run``), then the heap used
    (``GC.heap_info``). RSS follows the heap the JVM has committed, which grows within -Xmx and is not given back;
    what is live after a full GC says whether the process keeps more and more."""
    if pid is None or shutil.which("jcmd") is None:
        return None
    try:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=True)
        info = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60,
                              check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    # one "total ...K, used ...K" line per generation (Parallel GC: PSYoungGen, ParOldGen; G1: one for the heap)
    used = re.findall(r"total\s+\d+K,\s+used\s+(\d+)K", info)
    return sum(int(u) for u in used) / 1024 if used else None


# ------------------------------------------------------------------------------------------------ statistics


def flat(first: float | None, last: float | None) -> bool | None:
    """serve_load.py's rule: ``last`` not above ``first`` by more than max(100 MB, 20 %)."""
    if first is None or last is None:
        return None
    return last <= first + max(100.0, 0.2 * first)

def thirds(samples: list) -> dict:
    """The mean and the least of the first and of the last third of (time, MB) samples (None skipped), the max,
    the count."""
    vals = [v for _, v in samples if v is not None]
    if len(vals) < 3:
        return {"first": None, "max": max(vals) if vals else None, "last": None, "floor_first": None,
                "floor_last": None, "n": len(vals)}
    third = len(vals) // 3
    return {"first": statistics.fmean(vals[:third]), "max": max(vals), "last": statistics.fmean(vals[-third:]),
            "floor_first": min(vals[:third]), "floor_last": min(vals[-third:]), "n": len(vals)}

def number(value) -> float | None:
    """A time value of the numeric stream (int, Decimal or text) as a float."""
    if value is None:
        return None
    try:
        return float(Decimal(str(value)))
    except ArithmeticError:
        return None

def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by the nearest rank."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(-(-q * len(ordered) // 1)) - 1))]

def span(samples: list) -> dict:
    """first / max / last of (time, value) samples (values None skipped)."""
    vals = [v for _, v in samples if v is not None]
    if not vals:
        return {"first": None, "max": None, "last": None}
    return {"first": vals[0], "max": max(vals), "last": vals[-1]}

def backlog(lags: list, seconds: float) -> dict:
    """The lag samples (s since the start, lag s) taken while pushing: mean of the first and last thirds, the
    verdict, and the slope of a least-squares line."""
    first = [lag for t, lag in lags if t < seconds / 3]
    last = [lag for t, lag in lags if t >= 2 * seconds / 3]
    out = {"lag_first_s": statistics.fmean(first) if first else None,
           "lag_last_s": statistics.fmean(last) if last else None, "lag_slope": None, "sustained": None}
    if first and last:
        out["sustained"] = out["lag_last_s"] <= out["lag_first_s"] + max(1.0, 0.5 * out["lag_first_s"])
    if len(lags) >= 3:
        ts = [t for t, _ in lags]
        ys = [lag for _, lag in lags]
        mt, my = statistics.fmean(ts), statistics.fmean(ys)
        den = sum((t - mt) ** 2 for t in ts)
        if den:
            out["lag_slope"] = sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den
    return out

def fmt(value, spec: str = ".2f", none: str = "-") -> str:
    return none if value is None else format(value, spec)

def trio(d: dict) -> str:
    return "/".join(fmt(d.get(k), ".0f") for k in ("first", "max", "last"))


# ------------------------------------------------------------------------------------------------ plots


@dataclass
class Line:
    """One series of a panel: ``style`` a matplotlib format (``"o-"``); ``band``: (low, high) values filled
    around the line."""

    xs: Sequence
    ys: Sequence
    style: str = "o-"
    label: str | None = None
    color: str | None = None
    width: float | None = None
    alpha: float | None = None
    markersize: float | None = None
    band: tuple[Sequence, Sequence] | None = None


@dataclass
class Panel:
    """One set of axes: its lines, labels, log scales, horizontal reference lines ``(y, label, linestyle)`` and
    the legend (``legend``: its font size; ``outside``: placed right of the axes)."""

    lines: list[Line]
    xlabel: str
    ylabel: str
    title: str | None = None
    xlog: bool = False
    ylog: bool = False
    hlines: list[tuple[float, str, str]] = field(default_factory=list)
    legend: float | None = 7
    outside: bool = False


def plot(path: Path, panels: Sequence[Panel], size: tuple[float, float]) -> Path | None:
    """Draws ``panels`` side by side in one PNG at ``path`` (``size`` in inches); None without matplotlib (the
    tables are written all the same)."""
    plt = _results.pyplot()
    if plt is None:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=size, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        _draw(ax, panel)
    return _results.save_plot(fig, path)


def _draw(ax, panel: Panel) -> None:
    for line in panel.lines:
        kw = {k: v for k, v in (("label", line.label), ("color", line.color), ("lw", line.width),
                                ("alpha", line.alpha), ("markersize", line.markersize)) if v is not None}
        ax.plot(line.xs, line.ys, line.style, **kw)
        if line.band is not None:
            ax.fill_between(line.xs, line.band[0], line.band[1], color=line.color, alpha=0.25, lw=0)
    for y, label, style in panel.hlines:
        ax.axhline(y, color="grey", linewidth=0.8, linestyle=style, label=label)
    if panel.xlog:
        ax.set_xscale("log")
    if panel.ylog:
        ax.set_yscale("log")
    if panel.title:
        ax.set_title(panel.title, fontsize=9)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    if panel.legend and ax.get_legend_handles_labels()[0]:
        if panel.outside:
            ax.legend(fontsize=panel.legend, loc="center left", bbox_to_anchor=(1.01, 0.5))
        else:
            ax.legend(fontsize=panel.legend)
