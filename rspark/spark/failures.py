"""Telling Spark's failures apart: running out of memory, the JVM gone, and the error a user should see for each."""

from __future__ import annotations

import subprocess

from pyspark import SparkContext

from rspark.errors import MemoryLimitError, NotSupportedError, RsparkError, SparkStoppedError
from rspark.spark import gc_watch

# what Spark says of a plan or a generated SQL expression nested too deeply for its SQL parser, its optimiser's rule
# batches or the JVM's stack (the front end's bounds on nesting are above these: a query within them can still be
# too deep for Spark)
_TOO_COMPLEX = ("FAILED_TO_PARSE_TOO_COMPLEX", "java.lang.StackOverflowError", "Max iterations")
_OUT_OF_MEMORY = ("java.lang.OutOfMemoryError", "Java heap space", "GC overhead limit exceeded", "MemoryError")
# what PySpark raises when the JVM it talks to has gone away (the connection, or a SparkContext stopped under it)
_NO_TEXT = "(its text needs the JVM, which did not give it)"
_JVM_GONE = ("Connection refused", "Answer from Java side is empty", "SparkContext was shut down",
             "stopped SparkContext", "Py4JNetworkError", "driverEndpoint()", "Error while sending or receiving",
             # a job whose SparkContext the JVM's out-of-memory exit stopped (its DAGScheduler gone): a
             # NullPointerException that names neither memory nor the JVM
             'SparkContext.dagScheduler()" is null', _NO_TEXT)
# what Spark says of a job cancelled (by rspark.spark.gc_watch among others)
_CANCELLED = ("cancelled", "canceled")
# Spark's executor ends its JVM with this code after an OutOfMemoryError in a task (SparkExitCode.OOM); in local
# mode that JVM is also the driver's, so the whole session goes with it.
JVM_OOM_EXIT = 52
_RESTART = "The Spark JVM has stopped: a new process (or Engine) is needed to go on."
_ADVICE = ("Use a smaller window RANGE or fewer evaluation instants (--until, --times), or give Spark more memory "
           "(Engine(conf={'spark.driver.memory': '8g'}), or --conf spark.driver.memory=8g on the command line).")


def _texts(exc: BaseException):
    """The texts of ``exc`` and of the exceptions it was raised from or while handling."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        # rspark's own errors say what they are (a SERVICE endpoint's "Connection refused" is not the JVM's), and
        # one raised "from None" ends the chain: the causes it stands for are not Spark's failure either
        if not isinstance(exc, RsparkError):
            try:
                yield type(exc).__name__ + ": " + str(exc)
            except Exception:  # an exception whose text needs a JVM that is gone (or going: an OutOfMemoryError)
                yield repr(exc) + " " + _NO_TEXT
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def jvm_exit_code(wait: float = 0.0) -> int | None:
    """The exit code of the Spark JVM this Python process launched once it has exited (waiting up to ``wait``
    seconds for it), else None: still running, or not launched from here (a JVM that started Python, as
    spark-submit does)."""
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    try:
        return proc.wait(timeout=wait) if wait else proc.poll()
    except subprocess.TimeoutExpired:
        return None


def _mentions(markers, texts) -> str | None:
    """The first marker found in one of the texts, else None."""
    return next((marker for marker in markers for text in texts if marker in text), None)


def jvm_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is PySpark losing the JVM it talks to."""
    return _mentions(_JVM_GONE, list(_texts(exc))) is not None


def memory_limit_error(exc: BaseException, what: str, *, jvm: bool = False) -> RsparkError | None:
    """The error to report for a failure of Spark while ``what`` ran, else None (``exc`` is then not about
    Spark's resources and is reported as it is):

    * a :class:`MemoryLimitError` when ``exc`` (or what it was raised from) says that Spark ran out of memory,
      whatever wrapper PySpark put around it, or, with ``jvm``, when the JVM this process launched ended with
      Spark's out-of-memory exit code (in local mode an OutOfMemoryError in a task ends the JVM, and what PySpark
      raises then is only a lost connection; with ``jvm`` the JVM is given up to 30 s to end after a lost
      connection, 3 s after an out-of-memory error, so that the message can say whether the session is gone);
    * with ``jvm``, a :class:`SparkStoppedError` when that JVM ended with another code;
    * a :class:`~rspark.errors.NotSupportedError` when Spark found the query's plan or expressions nested too
      deeply to parse, optimise or walk (its SQL parser, its optimiser's iteration limit, the JVM's stack).

    A job that :mod:`rspark.spark.gc_watch` cancelled (the JVM collecting garbage most of the time; the session goes
    on), or a JVM it stopped, is a :class:`MemoryLimitError` with the watchdog's reason."""
    texts = list(_texts(exc))
    deep = _mentions(_TOO_COMPLEX, texts)
    if deep is not None and _mentions(_OUT_OF_MEMORY + _JVM_GONE, texts) is None:
        return NotSupportedError(
            f"{what} nests too deeply for Spark ({deep}): write its expressions or patterns with less nesting (a "
            "long expression in steps with BIND, a deep chain of OPTIONAL or nested groups in fewer levels)")
    hit = _mentions(_OUT_OF_MEMORY, texts)
    code = None
    if jvm:  # a JVM that is going takes a while to end (its heap full, its shutdown hooks running)
        code = jvm_exit_code(wait=30.0 if _mentions(_JVM_GONE, texts) else 3.0 if hit else 0.0)
    if hit is None and code == JVM_OOM_EXIT:
        hit = f"java.lang.OutOfMemoryError: the Spark JVM exited with code {JVM_OOM_EXIT}"
    if hit is None and (code is not None or _mentions(_CANCELLED, texts) is not None):
        hit = gc_watch.take_overrun()  # its jobs cancelled, or the JVM stopped, by the garbage-collection watchdog
    if hit is not None:
        return MemoryLimitError(
            f"{what} ran out of memory ({hit}): the windows' content or the answers held at once did not fit. "
            + _ADVICE + (" " + _RESTART if code is not None else ""))
    if code is not None:
        return SparkStoppedError(f"the Spark JVM stopped (exit code {code}) while {what} ran. " + _RESTART)
    return None
