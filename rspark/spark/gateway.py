"""The Spark JVM rspark launches, with its standard output and error read by rspark instead of inherited.

Why: a JVM that writes to the terminal itself puts lines there that are not rspark's: Spark's and Hadoop's start-up
notices (``Using Spark's default log4j profile``, ``Setting default log level``, NativeCodeLoader, the JDK's
incubator-module warning), Spark's log4j messages with their Java stack traces (Janino's "Code grows beyond 64 KB"
and whole-stage codegen's fallback among them), the Python workers' own output, and, after Ctrl-C or once the
Python process was killed, the errors of a JVM shutting down under a driver that is gone. Here every line the JVM
(and every process it starts) writes goes through one pipe to a thread of this process, which passes it to the
``rspark.spark.gateway`` logger at DEBUG (``rspark -vv`` shows it as ``rspark: debug: spark: ...``). When this
process ends, however it ends, the pipe has no reader: what the JVM writes then is lost rather than shown, and the
JVM, which watches its standard input (a pipe from this process, as PySpark starts it), exits. The command line
ends the JVM itself before it exits (:func:`shutdown`), so that a command ends when its JVM has ended.

The JVM is started as PySpark starts it (``pyspark.java_gateway.launch_gateway``: spark-submit with the session's
settings as ``--conf``, SIGINT ignored), before the SparkContext is created, which then uses it. A JVM that does
not start is an :class:`~rspark.errors.RsparkError` carrying its last lines (an invalid ``--conf
spark.driver.memory``, no Java), which would otherwise be lost in the pipe.
"""

from __future__ import annotations

import collections
import logging
import os
import subprocess
import threading

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway

from rspark.errors import RsparkError

__all__ = ["abandon_archive", "launch", "shutdown", "silence", "writes_archive"]

log = logging.getLogger("rspark.spark.gateway")

_TAIL: collections.deque = collections.deque(maxlen=8)  # the JVM's last lines, for the error when it does not start
_silenced = threading.Event()
_launched: list = []  # the Popen of the JVM launch() started (PySpark's gateway.proc), once it has
_dumping = threading.Event()  # that JVM writes a class-data-sharing archive as it exits (writes_archive())
_dump_cleanup: list = []  # what removes that archive's files (its dump, its lock), for abandon_archive()


def silence(on: bool = True) -> None:
    """Drop the JVM's lines from now on, even at DEBUG (an interrupted command: what a JVM stopping under it says
    is not the user's to read); ``on=False`` relays them again."""
    if on:
        _silenced.set()
    else:
        _silenced.clear()


def _relay(fd: int, done: threading.Event) -> None:
    """Read the JVM's output until every writer has closed the pipe, one logger call per line."""
    try:
        with os.fdopen(fd, "rb") as stream:
            for raw in stream:
                line = raw.decode("utf-8", "replace").rstrip()
                if not line:
                    continue
                _TAIL.append(line)
                if not _silenced.is_set():
                    log.debug("spark: %s", line)
    except Exception:  # noqa: BLE001 - the relay must never raise into the interpreter's shutdown
        pass
    finally:
        done.set()


def launch(settings: dict[str, str]) -> None:
    """Start the Spark JVM with ``settings`` (its ``--conf`` options, the master and the application name among
    them) and its output relayed, and make it the JVM of the SparkContext about to be created (PySpark's
    ``SparkContext._gateway``). Does nothing when PySpark already has a JVM (one started before, or the one of
    spark-submit, ``PYSPARK_GATEWAY_PORT``)."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf(loadDefaults=False)  # no JVM yet: the settings stay in Python, for the command line
    for key, value in settings.items():
        conf.set(key, value)
    read, write = os.pipe()
    done = threading.Event()
    _TAIL.clear()
    _silenced.clear()
    threading.Thread(target=_relay, args=(read, done), name="rspark-jvm-output", daemon=True).start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": write, "stderr": write})
    except Exception as exc:
        os.close(write)
        if type(exc).__name__ != "PySparkRuntimeError" or "JAVA_GATEWAY_EXITED" not in str(exc):
            raise
        done.wait(5.0)  # the JVM has exited: its last lines are in the pipe
        said = "; ".join(line.strip() for line in _TAIL if line.strip())
        raise RsparkError("the Spark JVM did not start" + (f": {said}" if said else "")) from None
    except BaseException:  # KeyboardInterrupt: the caller stops the JVM being launched
        os.close(write)
        raise
    os.close(write)  # the JVM (and the processes it starts) hold the pipe's other copies
    with SparkContext._lock:
        SparkContext._gateway = gateway
        SparkContext._jvm = gateway.jvm
    _launched[:] = [gateway.proc]


def _end_accumulator_server() -> None:
    """Tell PySpark's accumulator server (the socket the JVM sends Python tasks' accumulator updates through, opened
    by the first job that ran Python code) that the end is expected: without it, the JVM closing its end of the
    socket as it exits makes the server's handler read end-of-file and print a traceback to standard error."""
    try:
        server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
        if server is not None:
            server.server_shutdown = True
            server.handle_error = lambda request, client_address: None
    except Exception:  # noqa: BLE001 - the end of a command must not fail on PySpark's internals
        pass


def writes_archive(cleanup) -> None:
    """The JVM launched next writes a class-data-sharing archive as it exits (rspark.spark.cds): :func:`shutdown`
    stops its SparkContext and does not wait for it to exit. ``cleanup()`` removes the archive's files."""
    _dumping.set()
    _dump_cleanup[:] = [cleanup]


def abandon_archive() -> None:
    """An interrupted command ends now: a JVM that would write the class-data-sharing archive as it exits is killed
    instead (a command interrupted with Ctrl-C leaves no process behind, nor a dump half written) and the archive's
    files are removed, so that a later session writes it."""
    if not _dumping.is_set() or not _launched:
        return
    try:
        _launched[-1].kill()
    except OSError:
        pass
    for cleanup in _dump_cleanup:
        cleanup()


def shutdown(timeout: float = 30.0, wait: bool = True) -> int | None:
    """End the JVM :func:`launch` started and wait up to ``timeout`` seconds for it; its exit code, or None (no
    such JVM, or still running). Its standard input is closed, as the end of this process would close it: the JVM
    then exits, and its shutdown stops the SparkContext (a cluster application ends as finished). The command line
    does this before it exits, so that a command ends when its JVM has ended (a JVM left shutting down after its
    command returned still held the command's checkpoint and its cluster application). ``wait=False``: the JVM is
    told to end and not waited for (a local session that holds nothing a later command could need: its shutdown,
    about half a second, runs after the command has returned)."""
    if not _launched:
        return None
    proc = _launched.pop()
    _end_accumulator_server()
    if _dumping.is_set() and proc.poll() is None:
        # the JVM writes the class-data-sharing archive as it exits (rspark.spark.cds), seconds after its Spark has
        # stopped: the SparkContext is stopped here (the application ends, its files are released), and the JVM
        # finishes the archive on its own after this command has ended
        try:
            if SparkContext._active_spark_context is not None:
                SparkContext._active_spark_context.stop()
        except Exception:  # noqa: BLE001 - the end of a command must not fail on PySpark's internals
            pass
        try:
            proc.stdin.close()
        except (OSError, AttributeError):
            pass
        log.debug("the Spark JVM (pid %s) writes its class-data-sharing archive as it exits", proc.pid)
        return None
    if proc.poll() is None:
        try:
            proc.stdin.close()
        except (OSError, AttributeError):
            pass
        if not wait:
            log.debug("the Spark JVM (pid %s) ends after this command", proc.pid)
            return None
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        log.debug("the Spark JVM (pid %s) is still running %g s after its standard input was closed", proc.pid,
                  timeout)
        return None
