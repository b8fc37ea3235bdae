"""The ``rspark`` command line: argument handling and orchestration (the output formats are in
:mod:`rspark.engine.writers`).

Exit codes: 0 success; 2 a usage error or a bad query (a query syntax error, reported with file, line and column;
an unknown --profile; a --format that cannot hold a query's results; a bad --until / --times; a missing file named
on the command line); 1 bad data or another runtime failure (malformed data, out of memory, Spark stopped, a feature
rspark does not support); 130 interrupted (Ctrl-C); 141 the output pipe closed early (``| head``). Every such error
is one line on standard error, ``rspark: error: ...``. Anything else is a bug in rspark: its traceback is shown,
after a line saying so, and Python exits with 1.

Everything that needs no data is checked before Spark starts: the queries are parsed and translated, the profile,
the format (against each query's form), --until / --times, --conf and the files named by --stream / --data /
--graph (a stream file of 0 bytes: a warning).

Messages of the ``rspark`` logger (the engine's warnings: an empty stream, a window that is still open, ...) are
printed on standard error as ``rspark: warning: ...``, the bad elements of each input file up to
``WARNINGS_PER_FILE`` and then a line counting the others; ``-v`` adds INFO (and every bad element), ``-vv``
DEBUG (with the Spark JVM's own output, ``rspark: debug: spark: ...``), ``-q`` hides warnings. Standard error
carries nothing else. A stream file of 0 bytes is warned about before Spark starts (and not again at its load).
Every message is :func:`~rspark.errors.printable` (input it quotes cannot act on the terminal).

One module (about 700 lines): the three commands share the argument checks, the error and interrupt handling
and the logging set-up; the output formats are in :mod:`rspark.engine.writers`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import textwrap
import threading
import time
import warnings
from dataclasses import dataclass
from datetime import datetime
from decimal import InvalidOperation
from pathlib import Path

from rspark import __version__
from rspark.algebra.ops import QueryForm, RegisterKind
from rspark.algebra.sse import to_sse
from rspark.errors import WARNINGS_PER_FILE, InputError, RsparkError, printable, summarised
from rspark.model.terms import IRI
from rspark.model.time import DurationError, Timeline, WindowError, time_number
from rspark.model.timestamps import PROV_GENERATED_AT_TIME, parse_time
from rspark.rsp.policies import DefaultWindow, ReportPolicy
from rspark.rsp.profiles import ProfileError, get_profile
from rspark.rsp.report import policies_in_force
from rspark.rsp.windows import TimeWindowSpec
from rspark.syntax.parser import QuerySyntaxError
from rspark.syntax.translate import QueryError, compile_query, ensure_evaluable, refusals_under

log = logging.getLogger("rspark")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141

EXIT_CODES_HELP = textwrap.fill(
    "exit status: 0 success; 2 a usage error or a bad query (syntax error with file:line:column, unknown --profile, "
    "a --format that cannot hold a query's results, a bad --until or --times, a missing file); 1 bad data or "
    "another runtime failure (malformed stream or data, out of memory, Spark stopped, an unsupported feature); "
    "130 interrupted (Ctrl-C); 141 the output pipe closed early. Errors are one line on standard error, "
    "'rspark: error: ...'; a Python traceback means a bug in rspark.", width=79, break_on_hyphens=False)


class UsageError(RsparkError):
    """A command-line usage problem (exit code 2)."""


def exit_code(exc: RsparkError) -> int:
    """2 for a usage error or a bad query (syntax, translation, window, profile, format), 1 for the others
    (bad data, out of memory, Spark stopped, not supported, ...)."""
    # delayed: the result writers (with rspark.results, ~30 ms) are not loaded by `import rspark.cli` nor by explain
    from rspark.engine.writers import FormatError

    usage = (UsageError, InputError, QuerySyntaxError, QueryError, WindowError, DurationError, ProfileError,
             FormatError)
    return EXIT_USAGE if isinstance(exc, usage) else EXIT_FAILURE


def _version() -> str:
    return __version__


# ----------------------------------------------------------------------------------------------------- Ctrl-C


class _Interrupts:
    """Ctrl-C: the first SIGINT is recorded, the running Spark jobs are cancelled, and KeyboardInterrupt is raised;
    the command then ends with ``rspark: interrupted`` and exit code 130. Once an interrupt was received, whatever
    exception the command ends with (py4j and Spark raise their own while a call is cut short or the JVM goes) is
    reported as the interruption.

    When rspark runs as a program (``hard_exit``), the end is guaranteed: a second Ctrl-C, or a cleanup still
    running GRACE seconds after the first (a KeyboardInterrupt that Python reports as "ignored" in a finaliser, a
    thread stuck on a lock the interrupted code held), ends the process at once with the same line and code.

    PySpark's own handler (installed when its context starts) is replaced: it cancels the jobs through the main
    thread's py4j connection, which the interrupted call is still using ("reentrant call"), and py4j then logs
    tracebacks. Here the jobs are cancelled from another thread (its own connection), and py4j's logging is
    silenced once the interrupt arrived."""

    GRACE = 15.0

    def __init__(self) -> None:
        self.received = False
        self.hard_exit = False
        self._original = None
        self._quieted: list = []
        self._reported = threading.Lock()

    def install(self) -> None:
        """Put the handler in place (again after Spark started: PySpark installs its handler with its context)."""
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if getattr(previous, "_rspark", False):
            return
        if self._original is None:
            self._original = previous
        signal.signal(signal.SIGINT, self._handler)

    def _handler(self, signum, frame):
        if self.received:
            if self.hard_exit:
                self.exit_now()
            raise KeyboardInterrupt
        self.received = True
        self.quiet()
        _stop_unconnected_jvm()  # now, before PySpark's launcher removes its port file (the JVM would print why)
        if self.hard_exit:
            threading.Thread(target=self._watchdog, name="rspark-interrupt", daemon=True).start()
        _cancel_spark_jobs()
        raise KeyboardInterrupt

    _handler._rspark = True  # type: ignore[attr-defined]

    def check(self) -> None:
        """Raise KeyboardInterrupt if an interrupt was received (and swallowed on the way: Python ignores an
        exception raised in a finaliser)."""
        if self.received:
            raise KeyboardInterrupt

    def report(self) -> int:
        """Print ``rspark: interrupted`` (once) and return the exit code."""
        if self._reported.acquire(blocking=False):
            try:
                os.write(2, b"rspark: interrupted\n")  # not print: the main thread may be inside a write to stderr
            except OSError:
                pass
        return EXIT_INTERRUPTED

    def exit_now(self) -> None:
        self.quiet()
        self.report()
        _stop_unconnected_jvm()
        gateway = sys.modules.get("rspark.spark.gateway")
        if gateway is not None:  # a JVM that would write Spark's class archive as it exits: killed instead
            gateway.abandon_archive()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(EXIT_INTERRUPTED)

    def _watchdog(self) -> None:
        time.sleep(self.GRACE)
        self.exit_now()

    def quiet(self) -> None:
        """Silence py4j, which logs the calls the interrupt cut short with tracebacks (some through the root
        logger, which would otherwise configure itself to print them), and the Spark JVM's output (relayed to the
        ``rspark`` logger, :mod:`rspark.spark.gateway`): what a JVM stopping under an interrupted command says is
        not the user's to read, even with -vv."""
        gateway = sys.modules.get("rspark.spark.gateway")
        if gateway is not None:
            gateway.silence()
        if self._quieted:
            return
        root = logging.getLogger()
        null, drop = logging.NullHandler(), _DropPy4j()
        py4j = logging.getLogger("py4j")
        self._quieted = [(root, null, drop), (py4j, py4j.level), sys.unraisablehook]
        root.addHandler(null)
        root.addFilter(drop)
        py4j.setLevel(logging.CRITICAL + 1)
        sys.unraisablehook = _interrupt_ignored

    def restore(self) -> None:
        """Undo :meth:`install` and :meth:`quiet` (for callers of :func:`main` in the same process; a program
        that is ending keeps them)."""
        if self.hard_exit:
            return
        if self._original is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self._original)
        self._original = None
        gateway = sys.modules.get("rspark.spark.gateway")
        if gateway is not None:
            gateway.silence(False)
        if self._quieted:
            (root, null, drop), (py4j, level), hook = self._quieted
            root.removeHandler(null)
            root.removeFilter(drop)
            py4j.setLevel(level)
            sys.unraisablehook = hook
            self._quieted = []
        self.received = False
        self.hard_exit = False
        if self._reported.locked():
            self._reported.release()


def _interrupt_ignored(unraisable) -> None:
    """``sys.unraisablehook`` once an interrupt arrived: the KeyboardInterrupt the handler raised inside a finaliser
    (py4j's, run by the garbage collector) is not printed as "Exception ignored in ..." (:meth:`_Interrupts.check`
    and the watchdog act on the interrupt); anything else goes to Python's own hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


class _DropPy4j(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "py4j" not in record.pathname and not record.name.startswith("py4j")


def _cancel_spark_jobs(wait: float = 2.0) -> None:
    """Cancel the running Spark jobs, from a thread of its own (the main thread's py4j connection is busy), Spark's
    logging silenced first."""
    pyspark = sys.modules.get("pyspark")
    sc = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    if sc is None:
        return

    def cancel() -> None:
        try:
            # the run is ending: Spark's log of the tasks cut short (an error of a task whose broadcast is gone
            # under it, with its Java stack) is not the user's to read
            sc.setLogLevel("OFF")
            sc.cancelAllJobs()
        except Exception:  # the JVM is going: nothing left to cancel
            pass

    worker = threading.Thread(target=cancel, name="rspark-cancel", daemon=True)
    worker.start()
    worker.join(wait)


_INTERRUPTS = _Interrupts()


# ---------------------------------------------------------------------------------------------------- logging


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"rspark: {record.levelname.lower()}: {printable(record.getMessage())}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _SaidBefore(logging.Filter):
    """Drops a warning that the command printed before Spark started (a stream file of 0 bytes, known from its
    size) when the load gives it again: ``said`` holds those messages, each dropped once."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text in self.said:
            self.said.discard(text)
            return False
        return True


_said_before = _SaidBefore()


class _Libraries(logging.Handler):
    """The root logger's handler in the command line: what other libraries log there (py4j logs a call cut short by
    Ctrl-C with its traceback, through the root logger, which would otherwise print it as it is) and Python's
    warnings become DEBUG lines of the ``rspark`` logger, one per line, so that standard error carries rspark's
    lines only."""

    _rspark_cli = True

    def emit(self, record: logging.LogRecord) -> None:
        if not log.isEnabledFor(logging.DEBUG):
            return
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is dropped, not raised
            return
        for line in text.splitlines():
            if line.strip():
                log.debug("%s: %s", record.name, line)


def configure_logging(verbose: int = 0, quiet: bool = False) -> None:
    """The ``rspark`` logger to standard error as ``rspark: LEVEL: message``: warnings by default, INFO with one
    ``-v``, DEBUG with two, errors only with ``-q``. The Spark JVM's output (its log4j messages among them) is
    read by rspark and comes through this logger at DEBUG (:mod:`rspark.spark.gateway`)."""
    level = logging.ERROR if quiet else logging.DEBUG if verbose >= 2 else logging.INFO if verbose else logging.WARNING
    for handler in list(log.handlers):
        if getattr(handler, "_rspark_cli", False):
            log.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._rspark_cli = True
    handler.setFormatter(_Formatter())
    global _said_before
    _said_before = _SaidBefore()
    handler.addFilter(_said_before)
    log.addHandler(handler)
    log.setLevel(level)
    log.propagate = False
    root = logging.getLogger()
    if not any(getattr(h, "_rspark_cli", False) for h in root.handlers):
        root.addHandler(_Libraries())
    logging.captureWarnings(True)  # Python's warnings through the root logger, not printed on standard error


# ------------------------------------------------------------------------------------------------- arguments


@dataclass
class _Query:
    path: str
    text: str
    plan: object


def _read(path: str) -> str:
    """A query file's text ('-': standard input)."""
    try:
        if path == "-":
            return sys.stdin.read()
        _check_file("query", path)
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise UsageError(f"query: {path} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"query: cannot read {path}: {exc.strerror}") from None


def _queries(paths: list[str], base: str | None = None, *, evaluated: bool = True,
             sparql: bool = False, profile: str | None = None) -> list[_Query]:
    """Read, parse and translate the query files (a syntax or translation error raises, exit code 2); when they
    are to be ``evaluated``, a construct rspark does not evaluate is refused too (exit code 2). ``sparql``:
    SPARQL 1.1 queries (their syntax errors name no keyword of continuous queries); ``profile``: the engine
    profile they run under."""
    if paths.count("-") > 1:
        raise UsageError("standard input ('-') can give one query only")
    out = []
    for path in paths:
        text = _read(path)
        plan = compile_query(text, base_iri=base, source=path, sparql=sparql)
        if evaluated:
            ensure_evaluable(plan, source=path, profile=profile)
        out.append(_Query(path, text, plan))
    return out


def _check_file(what: str, path: str) -> None:
    """``path`` names a readable local file (paths with another scheme than file://, e.g. hdfs://, are left to
    Spark)."""
    # delayed: rdf imports pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading import rdf

    if path == "-":
        raise UsageError(f"{what}: standard input ('-') is not supported here; give a file")
    local = rdf.local_path(path)
    if local is None:
        return
    if not os.path.exists(local):
        raise UsageError(f"{what}: no such file: {path}")
    if os.path.isdir(local):
        raise UsageError(f"{what}: {path} is a directory, not a file")
    if not os.access(local, os.R_OK):
        raise UsageError(f"{what}: cannot read {path}: permission denied")


def _mapping_file(path: str, format: str | None):
    """--mapping FILE: the mapping, read and checked before Spark starts (a problem names the file, the line and the
    key); --stream-format, when given, must be a record format (csv, json, jsonl)."""
    # delayed: the mapping module imports PyYAML and pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading.mapping import MappingError, load_mapping, record_format

    _check_file("--mapping", path)
    if format is not None:
        try:
            record_format(format)
        except ValueError:
            raise UsageError(f"--stream-format {format}: with --mapping, the records' format: csv, json or jsonl"
                             ) from None
    try:
        return load_mapping(path)
    except MappingError as exc:
        raise UsageError(f"--mapping {exc}") from None


def _check_mapped_file(what: str, path: str, format: str | None) -> str:
    """A stream file of records a --mapping maps: readable, its format given or told by its extension."""
    # delayed: the mapping module imports PyYAML and pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading.mapping import record_format

    _check_file(what, path)
    try:
        record_format(format, path)
    except ValueError as exc:
        raise UsageError(f"{what}: {exc}") from None
    return path


def _check_rdf_file(what: str, path: str, *, stream: bool = False, format: str | None = None) -> str:
    """A data or stream file: readable, in a format known from its extension (a stream: TriG or N-Quads, an RDF
    Message Log, NDJSON-LD or JSON-LD; ``format``: --stream-format)."""
    # delayed: rdf imports pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading import messages, rdf

    _check_file(what, path)
    try:
        if stream and messages.stream_format(path, format, messages.file_head(path)) is not None:
            return path
        fmt = rdf.detect_format(path, format)
    except ValueError:
        if format is not None:
            raise UsageError(f"--stream-format {format}: unknown (trig, nquads, ndjsonld, jsonld, trig-messages, "
                             "nquads-messages, turtle-messages, ntriples-messages)") from None
        more = " (a stream also .ndjsonld, .jsonld, .json; or give --stream-format)" if stream else ""
        raise UsageError(f"{what}: cannot tell the RDF format of {path} from its extension (expected .ttl, .n3, "
                         f".nt, .nq, .trig, .rdf, .owl or .xml, optionally followed by .gz){more}") from None
    if stream and fmt not in rdf.QUAD_FORMATS:
        raise UsageError(f"{what}: a stream is a TriG or N-Quads file (.trig, .nq, optionally .gz), an RDF Message "
                         f"Log (VERSION \"1.2-messages\"), NDJSON-LD or JSON-LD, not {fmt}: {path}")
    return path


_BAD_IRI_CHARS = '<>" {}|\\^`\n\r\t'


def _stamp_arguments(command: argparse.ArgumentParser, streams: str) -> None:
    """--timestamp-predicate and --end-predicate (:func:`_check_predicates`), which replay and run take."""
    command.add_argument("--timestamp-predicate", metavar="IRI", default=None,
                         help=f"the predicate of the {streams}' timestamp triples (default prov:generatedAtTime); its "
                              "object is an instant, or an interval 'start/end' (docs/streams.md)")
    command.add_argument("--end-predicate", metavar="IRI", default=None,
                         help="the predicate of the triple that ends an element's validity interval (its start is "
                              "its timestamp), e.g. http://www.w3.org/ns/prov#invalidatedAtTime")


def _check_predicates(args: argparse.Namespace) -> None:
    """--timestamp-predicate and --end-predicate checked before Spark starts, and written bare."""
    for flag in ("timestamp_predicate", "end_predicate"):
        value = getattr(args, flag)
        if value is not None:
            setattr(args, flag, _check_predicate(value, "--" + flag.replace("_", "-")))


def _check_predicate(iri: str, flag: str) -> str:
    """A --timestamp-predicate / --end-predicate value, an absolute IRI written bare or in angle brackets, bare."""
    bare = iri[1:-1] if iri.startswith("<") and iri.endswith(">") else iri
    scheme, _, rest = bare.partition(":")
    if not scheme or not rest or not scheme[0].isalpha() or any(c in bare for c in ' <>"{}|^`\\'):
        raise UsageError(f"{flag} expects an absolute IRI (e.g. http://example.org/atInterval), got {iri!r}")
    return bare


def _pairs(values: list[str] | None, flag: str) -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        iri, sep, path = value.partition("=")
        if not sep or not iri or not path:
            raise UsageError(f"{flag} expects IRI=PATH, got {value!r}")
        if iri.startswith("<") and iri.endswith(">"):
            iri = iri[1:-1]
        if not iri or any(ch in iri for ch in _BAD_IRI_CHARS):
            raise UsageError(f"{flag} {value}: {iri!r} is not an IRI")
        out.append((iri, path))
    return out


def _conf(values: list[str] | None) -> dict[str, str]:
    """``--conf KEY=VALUE`` options: Spark configuration for the session (e.g. spark.driver.memory=8g)."""
    out = {}
    for value in values or []:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip() or not setting.strip():
            raise UsageError(f"--conf expects KEY=VALUE (a Spark setting, e.g. spark.driver.memory=8g), "
                             f"got {value!r}")
        out[key.strip()] = setting.strip()
    return out


def _short_run(conf: dict[str, str], master: str | None, paths: list[str]) -> dict[str, str]:
    """``conf`` with ``spark.rspark.jit=quick`` when the run is a short one: a local master and input files of at
    most QUICK_INPUT_BYTES (rspark.spark.session), unless the user set it or the driver's Java options."""
    # delayed: the session module imports PySpark
    from rspark.spark.session import JIT_CONF, QUICK_INPUT_BYTES, is_local

    if JIT_CONF in conf or "spark.driver.extraJavaOptions" in conf or not is_local(master):
        return conf
    total = 0
    for path in paths:
        try:
            size = os.path.getsize(path)
        except OSError:
            return conf  # (not a local file: its size is not known)
        total += size * (8 if path.endswith(".gz") else 1)
    if total > QUICK_INPUT_BYTES:
        return conf
    log.info("input of %d bytes: a short run, the JVM compiles with its quick compiler only (%s=quick; "
             "--conf %s=full turns it off)", total, JIT_CONF, JIT_CONF)
    return {**conf, JIT_CONF: "quick"}


def _time(option: str, value: str, *, end: bool = False) -> str:
    """A --until / --times instant checked for its form (a number or an ISO 8601 date-time; ``end`` for --until)
    and a number for the bounds of the query's instants (at most 10^18, 60 decimal places): its meaning (units, the
    stream's time kind) is the engine's."""
    text = value.strip()
    if end and text.lower() == "end":
        return "end"
    try:
        number, problem = time_number(text)
    except InvalidOperation:
        pass
    else:
        if problem is not None and (number is None or number.is_finite()):
            raise UsageError(f"{option}: time {text} {problem}")
        if number is not None and number.is_finite():
            return text
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        return text
    except ValueError:
        pass
    raise UsageError(f"{option}: not a time: {value!r} (a number, or an ISO 8601 date-time such as "
                     f"2026-03-01T13:05:00Z{', or end' if end else ''})")


def _times(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError("--times expects a comma-separated list of instants")
    return [_time("--times", item) for item in items]


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


# -------------------------------------------------------------------------------------------------- commands


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the algebra of each query file."""
    profile = get_profile(args.profile)  # an unknown name: ProfileError, listing the known ones
    queries = _queries(args.queries, args.base, evaluated=False)
    for i, q in enumerate(queries):
        if len(queries) > 1:
            print(("\n" if i else "") + f"# {q.path}")
        print(to_sse(q.plan))
        for line in _report_lines(q.plan, profile):
            print(line)
        for r in refusals_under(q.plan, profile):  # the algebra is printed; that it would not run is said
            where = f"{q.path}:{r.line}:{r.column}" if r.line else q.path
            scope = " in a continuous query" if r.continuous_only else ""
            log.warning("%s: not supported%s: %s: %s", where, scope, r.construct, r.reason)
    return EXIT_OK


def _report_lines(plan, profile) -> list[str]:
    """One comment line per window: the report policies it is evaluated under and where they come from."""
    every = plan.register is not None and plan.register.every is not None
    lines = []
    for d in plan.dataset.windows:
        name = f"window <{d.name.value}>" if d.name is not None else "the window"
        if d.spec is None and profile.default_window is DefaultWindow.ELEMENT:
            lines.append(f"; {name} reads <{d.stream.value}> with no window: each element alone, reported at its "
                         "timestamp (stream-to-stream)")
            continue
        report = d.spec.report if d.spec is not None else None
        period = d.spec.report_every if d.spec is not None else None
        policies, source = policies_in_force(report, isinstance(d.spec, TimeWindowSpec), profile,
                                             every or period is not None)
        origin = "the query's REPORT clause" if source == "query" else \
            f"profile {profile.name}" + (" with COMPUTED EVERY" if every else "")
        named = " ".join(p for p in ReportPolicy if p in policies)
        if period is not None:
            named = named.replace(ReportPolicy.PERIODIC, f"{ReportPolicy.PERIODIC} every {period.sse()}")
        lines.append(f"; {name} on <{d.stream.value}> reports: {named} ({origin})")
    return lines


def _load_static(engine, data: list[str], graphs: list[tuple[str, str]], versions=()) -> None:
    """The static data: --data files into the default graph, --graph IRI=PATH files as named graphs, and the
    versions of graphs that change over time (:func:`_versions`)."""
    for path in data:
        log.info("loading %s", path)
        engine.load(path)
    for iri, path in graphs:
        log.info("loading %s as <%s>", path, iri)
        engine.load(path, graph=iri)
    for iri, path, since in versions:
        log.info("loading %s as %s from %s", path, f"<{iri}>" if iri else "the default graph", since)
        engine.load(path, graph=iri, valid_from=since)


def _refreshed(args: argparse.Namespace) -> list[tuple[str, str, float]]:
    """``--graph-refresh IRI=SOURCE@PERIOD``: (graph IRI, a file or an http(s) SPARQL endpoint, the period in
    seconds), checked before Spark starts."""
    # delayed: runner imports PySpark (~0.3 s) and live mode; only --graph-refresh needs these
    from rspark.engine.live.refresh import is_endpoint
    from rspark.engine.live.runner import refresh_period

    out = []
    for iri, value in _pairs(args.graph_refresh, "--graph-refresh"):
        source, sep, every = value.rpartition("@")
        shown = f"--graph-refresh {iri}={value}"
        if not sep or not source or not every:
            raise UsageError(f"{shown}: expected IRI=SOURCE@PERIOD (a file or a SPARQL endpoint, and a duration: "
                             "PT20S, 20s, or seconds)")
        try:
            seconds = refresh_period(every)
        except RsparkError as exc:
            raise UsageError(f"{shown}: {exc}") from None
        if not is_endpoint(source):
            _check_rdf_file(shown, source)
        out.append((iri, source, seconds))
    return out


def _versions(args: argparse.Namespace) -> list[tuple[str | None, str, str]]:
    """``--data-version PATH@INSTANT`` and ``--graph-version IRI=PATH@INSTANT``: (graph IRI or None, path, the
    instant the version is valid from), checked before Spark starts (the instant after the last ``@``: a number
    or an ISO 8601 date-time; the file a triple format)."""
    # delayed: rdf imports pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading import rdf

    wanted = [(None, value, "--data-version") for value in args.data_version or []]
    wanted += [(iri, value, "--graph-version") for iri, value in _pairs(args.graph_version, "--graph-version")]
    out = []
    for iri, value, flag in wanted:
        path, sep, since = value.rpartition("@")
        shown = f"{flag} {iri + '=' if iri else ''}{value}"
        if not sep or not path or not since:
            raise UsageError(f"{shown}: expected {'IRI=' if iri else ''}PATH@INSTANT (the instant the version is "
                             "valid from: a number or an ISO 8601 date-time)")
        try:
            parse_time(since, Timeline.datetime())
        except RsparkError as exc:
            raise UsageError(f"{shown}: {exc}") from None
        _check_rdf_file(shown, path)
        if rdf.detect_format(path) in rdf.QUAD_FORMATS:
            raise UsageError(f"{shown}: a version of a graph is one graph: a triple format (.ttl, .nt, .rdf), "
                             f"not a dataset ({path})")
        out.append((iri, path, since))
    return out


def _version_arguments(command: argparse.ArgumentParser) -> None:
    """--data-version and --graph-version (:func:`_versions`), which replay and run take."""
    command.add_argument("--data-version", action="append", metavar="PATH@INSTANT",
                         help="a version of the default graph, valid from INSTANT (a number or an ISO 8601 "
                              "date-time) until the next version; repeatable (docs/language.md, background graphs "
                              "that change over time)")
    command.add_argument("--graph-version", action="append", metavar="IRI=PATH@INSTANT",
                         help="a version of the named graph IRI, valid from INSTANT until the next version; "
                              "repeatable")


def cmd_sparql(args: argparse.Namespace) -> int:
    """Answer a SPARQL 1.1 query over static data files."""
    # delayed: the result writers (~30 ms), for the commands that write results
    from rspark.engine.writers import Head, check_sparql_format, default_sparql_format

    [query] = _queries([args.query], args.base, evaluated=False, sparql=True)
    if query.plan.is_continuous:
        raise UsageError(f"{query.path} reads a stream or registers a continuous query: use `rspark replay` "
                         f"(`rspark sparql` answers queries over static data)")
    ensure_evaluable(query.plan, continuous=False, source=query.path)
    head = Head.of(query.plan, query.path)
    fmt = args.format or default_sparql_format(head, _stdout_is_terminal())
    check_sparql_format(fmt, head)
    conf = _conf(args.conf)
    data = [_check_rdf_file("--data", path) for path in args.data or []]
    graphs = [(iri, _check_rdf_file(f"--graph {iri}", path)) for iri, path in _pairs(args.graph, "--graph")]

    # delayed: PySpark (~0.3 s), once the arguments are checked
    from rspark.engine.engine import Engine

    conf = _short_run(conf, args.master, data + [path for _, path in graphs])
    log.info("starting Spark (master %s)", args.master or "local[*]")
    _jvm_end_not_awaited(args.master)
    with Engine(master=args.master, conf=conf) as engine:
        _INTERRUPTS.install()
        _load_static(engine, data, graphs)
        log.info("answering %s", query.path)
        result = engine.sparql(query.text, base_iri=args.base, source=query.path)
        sys.stdout.write(result.serialize(fmt))
        sys.stdout.flush()
    return EXIT_OK


def _warn_empty_streams(streams: list[tuple[str, str]]) -> None:
    """The stream files of 0 bytes, warned about before Spark starts; the load's warning, in the same words, is
    not printed again (_SaidBefore)."""
    # delayed: rdf imports pyoxigraph, which `import rspark.cli` does not load
    from rspark.spark.loading import rdf

    for iri, path in streams:
        if rdf.is_empty_file(path):
            text = rdf.empty_stream_warning(iri, path)
            log.warning("%s", text)
            _said_before.said.add(text)


def _check_replay_queries(queries: list[_Query], streams: list[tuple[str, str]]) -> None:
    """Each query reads a stream, and every stream it reads is given (--stream) or registered by a query."""
    given = {iri for iri, _ in streams}
    registered = {q.plan.register.name.value for q in queries
                  if q.plan.register is not None and q.plan.register.kind == RegisterKind.STREAM
                  and isinstance(q.plan.register.name, IRI)}
    for q in queries:
        windows = q.plan.dataset.windows
        if not windows:
            raise UsageError(f"{q.path} reads no stream (no FROM NAMED WINDOW or FROM STREAM): use `rspark sparql` "
                             f"for a query over static data")
        for w in windows:
            iri = w.stream.value
            if iri not in given and iri not in registered:
                known = ", ".join(f"<{i}>" for i in sorted(given | registered))
                raise UsageError(f"{q.path} reads the stream <{iri}>, which no --stream gives (add --stream "
                                 f"{iri}=PATH; given: {known or 'none'})")


def _report_problems(errors: list) -> None:
    """The problems skipped in the input files, as warnings: the first WARNINGS_PER_FILE of each file, then a
    line counting the others; with -v every one (rspark.errors.summarised)."""
    limit = None if log.isEnabledFor(logging.INFO) else WARNINGS_PER_FILE
    for line in summarised(errors, limit, hint="-v lists them"):
        log.warning("%s", line)


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay continuous queries over recorded streams; print one record per evaluation instant."""
    # delayed: the result writers (~30 ms), for the commands that write results
    from rspark.engine.writers import Head, ReplayWriter, replay_columns

    streams = _pairs(args.stream, "--stream")
    if not streams:
        raise UsageError("replay needs at least one --stream IRI=PATH")
    _check_predicates(args)
    seen: set = set()
    for iri, _ in streams:
        if iri in seen:
            raise UsageError(f"--stream {iri} is given twice")
        seen.add(iri)
    graphs = _pairs(args.graph, "--graph")
    conf = _conf(args.conf)
    until = _time("--until", args.until, end=True) if args.until is not None else None
    times = _times(args.times)
    if args.profile is not None:
        get_profile(args.profile)  # an unknown name: ProfileError, listing the known ones
    queries = _queries(args.queries, profile=args.profile)
    _check_replay_queries(queries, streams)
    fmt = args.format or ("table" if _stdout_is_terminal() else "jsonl")
    columns = replay_columns(fmt, [Head.of(q.plan, q.path) for q in queries])
    mapping = _mapping_file(args.mapping, args.stream_format) if args.mapping is not None else None
    streams = [(iri, _check_mapped_file(f"--stream {iri}", path, args.stream_format) if mapping is not None
                else _check_rdf_file(f"--stream {iri}", path, stream=True, format=args.stream_format))
               for iri, path in streams]
    data = [_check_rdf_file("--data", path) for path in args.data or []]
    graphs = [(iri, _check_rdf_file(f"--graph {iri}", path)) for iri, path in graphs]
    versions = _versions(args)
    _warn_empty_streams(streams)

    # delayed: PySpark (~0.3 s), once the arguments are checked
    from rspark.engine.engine import Engine

    inputs = [path for _, path in streams] + data + [path for _, path in graphs]
    conf = _short_run(conf, args.master, inputs + [path for _, path, _ in versions])
    log.info("starting Spark (master %s)", args.master or "local[*]")
    _jvm_end_not_awaited(args.master)
    with Engine(master=args.master, profile=args.profile, conf=conf) as engine:
        _INTERRUPTS.install()
        _load_static(engine, data, graphs, versions)
        log.info("loading %s", ", ".join(f"{path} as <{iri}>" for iri, path in streams))
        engine.add_streams(streams, strict=args.strict,  # loaded concurrently
                           timestamp_predicate=args.timestamp_predicate or PROV_GENERATED_AT_TIME,
                           end_predicate=args.end_predicate, format=args.stream_format, mapping=mapping)
        _report_problems(engine.errors)
        log.info("replaying %s", ", ".join(q.path for q in queries))
        records = engine.replay_iter([q.text for q in queries], until=until, times=times,
                                     names=[Path(q.path).name for q in queries])
        writer = ReplayWriter(fmt, sys.stdout, columns)
        count = 0
        for rec in records:
            _INTERRUPTS.check()
            writer.write(rec)
            count += 1
        writer.close()
        log.info("%d records", count)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """Live: run continuous queries over streams as they arrive; print each record as it is reported."""
    # delayed: live mode's sinks and sources and the writers (~40 ms), for `rspark run` only
    from rspark.engine.live.mqtt import SCHEME as MQTT
    from rspark.engine.live.mqtt import MqttSink, parse_mqtt
    from rspark.engine.live.sinks import FileSink, KafkaSink, TextSink, TrigDirectorySink
    from rspark.engine.live.sources import MAPPED_SOURCES, MESSAGE_SOURCES, parse_kafka, parse_source
    from rspark.engine.writers import Head, replay_columns
    from rspark.spark.loading.payload import RECORD_FORMATS, message_format

    sources = _pairs(args.source, "--source")
    if not sources:
        raise UsageError("run needs at least one --source IRI=DIR|kafka://HOST:PORT/TOPIC|tcp://HOST:PORT|"
                         "replay:PATH@SPEED|mqtt://HOST:PORT/TOPIC|sse://HOST:PORT/PATH|ws://HOST:PORT/PATH")
    kafka = False
    for _, spec in sources:
        kafka = parse_source(spec)[0] == "kafka" or kafka  # a bad source: InputError before Spark starts
    histories = _pairs(args.history, "--history")
    for iri, path in histories:
        if iri not in dict(sources):
            raise UsageError(f"--history {iri}: no --source declares that stream")
        _check_rdf_file(f"--history {iri}", path, stream=True)
    _check_predicates(args)
    mappings = {}
    for iri, path in _pairs(args.mapping, "--mapping"):
        if iri not in dict(sources):
            raise UsageError(f"--mapping {iri}: no --source declares that stream")
        if iri in mappings:
            raise UsageError(f"--mapping {iri} is given twice")
        if parse_source(dict(sources)[iri])[0] not in MAPPED_SOURCES:
            raise UsageError(f"--mapping {iri}: a mapping is taken by directory, kafka://, mqtt://, sse:// and ws:// "
                             f"sources, not by {dict(sources)[iri]}")
        mappings[iri] = _mapping_file(path, None)
    for iri, spec in sources:  # a payload format that does not go with the stream: before Spark starts
        kind = parse_source(spec)[0]
        if kind in MESSAGE_SOURCES:
            message_format(spec, args.payload_format, mappings.get(iri), rdf=kind == "mqtt")
        elif kind == "kafka" and iri not in mappings and parse_kafka(spec)["format"] in RECORD_FORMATS:
            message_format(spec, parse_kafka(spec)["format"], None)
    graphs = _pairs(args.graph, "--graph")
    conf = _conf(args.conf)
    until = _time("--until", args.until) if args.until is not None else None
    if args.max_seconds is not None and args.max_seconds <= 0:
        raise UsageError("--max-seconds must be positive")
    if args.profile is not None:
        get_profile(args.profile)
    queries = _queries(args.queries, profile=args.profile)
    fmt = args.format or ("table" if _stdout_is_terminal() else "jsonl")
    heads = [Head.of(q.plan, q.path) for q in queries]
    columns = replay_columns(fmt, heads)
    to_mqtt = args.output is not None and args.output.startswith(MQTT)
    output_kafka = None
    if to_mqtt:
        parse_mqtt(args.output, wildcards=False)  # a bad broker URL: InputError before Spark starts
    elif args.output is not None and args.output.startswith("kafka://"):
        output_kafka = parse_kafka(args.output)
        if args.format not in (None, "jsonl"):
            raise UsageError(f"--output kafka://... writes jsonl records, not {args.format}")
        if output_kafka["format"] != "auto" or set(output_kafka["options"]) - {"startingOffsets"} - {
                k for k in output_kafka["options"] if k.startswith("kafka.")} or "," in output_kafka["topic"]:
            raise UsageError("--output kafka://HOST:PORT/TOPIC takes one topic and only kafka.<producer setting> "
                             "options")
        kafka = True
    elif args.output is not None and fmt not in ("jsonl", "csv", "tsv"):
        raise UsageError(f"--output writes jsonl, csv or tsv, not {fmt}")
    if args.payload_format is not None and not any(parse_source(spec)[0] in MESSAGE_SOURCES for _, spec in sources):
        raise UsageError("--payload-format is for mqtt://, sse:// and ws:// sources (a Kafka address says "
                         "format=...)")
    if kafka:
        conf.setdefault("spark.rspark.kafka", "true")  # Spark's Kafka connector on the session (rspark.spark.kafka)
    data = [_check_rdf_file("--data", path) for path in args.data or []]
    graphs = [(iri, _check_rdf_file(f"--graph {iri}", path)) for iri, path in graphs]
    versions = _versions(args)
    refreshed = _refreshed(args)

    # delayed: PySpark (~0.3 s), once the arguments are checked
    from rspark.engine.engine import Engine

    log.info("starting Spark (master %s)", args.master or "local[*]")
    with Engine(master=args.master, profile=args.profile, conf=conf, checkpoint=args.checkpoint) as engine:
        _INTERRUPTS.install()
        _load_static(engine, data, graphs, versions)
        for iri, source, every in refreshed:
            log.info("reading <%s> from %s every %s s", iri, source, every)
            engine.refresh_graph(iri, source, every)
        runner = engine.live
        runner.until = until
        if to_mqtt:  # each (query, instant) published once across restarts, as --output FILE writes it
            sink = MqttSink(args.output, os.path.join(runner.checkpoint, "mqtt-sink.json"))
        elif output_kafka is not None:
            sink = KafkaSink(engine.spark, output_kafka["servers"], output_kafka["topic"], output_kafka["options"])
        elif args.output:
            sink = FileSink(args.output, fmt, columns)
        else:
            sink = TextSink(fmt, sys.stdout, columns)
        for q in queries:
            sinks = [sink]
            if args.trig_dir and q.plan.form == QueryForm.CONSTRUCT:
                sinks.append(TrigDirectorySink(args.trig_dir))
            engine.register(q.text, name=Path(q.path).name, sinks=sinks)
        options = {"lateness": args.lateness or 0, "arrival_time": args.arrival_time}
        if args.timestamp_predicate is not None:
            options["timestamp_predicate"] = args.timestamp_predicate
        if args.end_predicate is not None:
            options["end_predicate"] = args.end_predicate
        for iri, path in histories:  # before any live element
            engine.live_stream(iri, history=path, mapping=mappings.get(iri), **options)
        for iri, spec in sources:
            mqtt = {"payload_format": args.payload_format} if parse_source(spec)[0] in MESSAGE_SOURCES else {}
            mapped = {"mapping": mappings[iri]} if iri in mappings else {}
            engine.source(iri, spec, **options, **mqtt, **mapped)
        started = time.time()
        status = _StatusLine(runner) if sys.stderr.isatty() and not args.quiet else None
        reason = "interrupted"
        try:
            while True:
                _INTERRUPTS.check()
                if runner.failure is not None:
                    raise RsparkError(f"live mode stopped: {runner.failure}")
                if until is not None and runner.reached(until):
                    reason = f"every stream reached {until}"
                    break
                if args.max_seconds is not None and time.time() - started >= args.max_seconds:
                    reason = f"{args.max_seconds} s elapsed"
                    break
                if runner.paced and all(p.done for p in runner.paced) and len(runner.paced) == len(sources) \
                        and runner.wait_idle(timeout=5):
                    reason = "the replayed streams ended"
                    break
                if status is not None:
                    status.show()
                time.sleep(0.2)
        finally:
            if status is not None:
                status.clear()
        log.info("stopping: %s", reason)
        runner.close(flush=True)
        sink.close()
        for iri, counters in runner.status()["streams"].items():
            log.info("<%s>: %d elements, %d late, %d rejected", iri, counters["elements"], counters["late"],
                     counters["rejected"])
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    """The HTTP + Server-Sent Events service over live mode (docs/service.md)."""
    # delayed: the service's modules (~50 ms), for `rspark serve` only
    from rspark.service.server import check_binding, check_port, read_token, serve
    from rspark.service.state import Limits

    token = read_token(args.token_file) if args.token_file else None
    check_binding(args.host, token)  # before Spark starts
    if not 0 < args.port <= 65535:
        raise UsageError(f"--port {args.port}: a port number, 1 to 65535")
    check_port(args.host, args.port)
    for flag in ("max_body", "max_queries", "max_window_elements", "max_instants", "keep_events"):
        if getattr(args, flag) <= 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be positive")
    if args.profile is not None:
        get_profile(args.profile)
    data = [_check_rdf_file("--data", path) for path in args.data or []]
    graphs = [(iri, _check_rdf_file(f"--graph {iri}", path)) for iri, path in _pairs(args.graph, "--graph")]
    limits = Limits(max_body=args.max_body, max_queries=args.max_queries,
                    max_window_elements=args.max_window_elements, max_instants=args.max_instants,
                    keep_events=args.keep_events)
    serve(host=args.host, port=args.port, token=token, checkpoint=args.checkpoint, master=args.master,
          conf=_conf(args.conf), profile=args.profile, limits=limits, cors=args.cors, data=data, graphs=graphs,
          kafka=args.kafka)
    return EXIT_OK


class _StatusLine:
    """One line on standard error (a terminal), rewritten in place: elements in, late, records, the horizon."""

    def __init__(self, runner) -> None:
        self.runner, self.last = runner, 0.0

    def show(self) -> None:
        if time.time() - self.last < 0.5:
            return
        self.last = time.time()
        st = self.runner.status()
        elements = sum(s["elements"] for s in st["streams"].values())
        late = sum(s["late"] for s in st["streams"].values())
        records = sum(q["records"] for q in st["queries"].values())
        horizons = [str(q["horizon"]) for q in st["queries"].values() if q["horizon"] is not None]
        # a broker's source that lost its broker (Kafka, MQTT): named until it is back
        waiting = [src["source"] for s in st["streams"].values() for src in s.get("sources", [])
                   if src.get("connected") is False]
        sys.stderr.write(f"\r\x1b[Krspark: live: {elements} elements, {late} late, {records} records"
                         + (f", reported up to {min(horizons)}" if horizons else "")
                         + (f", waiting for {', '.join(waiting)}" if waiting else ""))
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


# ---------------------------------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (``rspark: error: ...``, exit code 2) instead of argparse's usage text."""

    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:  # the command's help, not the top level's
            command = getattr(parsed, "command", None)
            prog = f"{self.prog} {command}" if command else self.prog
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{prog} --help')")
        return parsed


def _logging_options(parser: argparse.ArgumentParser, dest: str) -> None:
    group = parser.add_argument_group("messages")
    group.add_argument("-v", "--verbose", action="count", dest=dest + "verbose", default=0,
                       help="more messages on standard error: -v progress (INFO), -vv details (DEBUG)")
    group.add_argument("-q", "--quiet", action="store_true", dest=dest + "quiet", default=False,
                       help="no warnings, errors only")


def _fill(text: str) -> str:
    return textwrap.fill(text, width=79, break_on_hyphens=False)


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="rspark", epilog=EXIT_CODES_HELP, formatter_class=formatter,
        description=_fill("RDF Stream Processing on Apache Spark: continuous SPARQL (RSP-QL, RSEP-QL, EP-SPARQL, "
                          "RSP-QL*)."))
    parser.add_argument("--version", action="version", version=f"rspark {_version()}")
    _logging_options(parser, "")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    explain = commands.add_parser(
        "explain", help="print the parsed algebra of a query (S-expressions, as Jena's SSE)", epilog=EXIT_CODES_HELP,
        formatter_class=formatter, description=_fill(
                    "Parse and translate each query file and print its algebra: the streaming dataset (windows, "
                    "graphs), registration, R2S operator, and the operator tree. Spark is not started."))
    explain.add_argument("queries", nargs="+", metavar="QUERY.rq", help="query file(s); '-' reads standard input")
    explain.add_argument("--base", metavar="IRI", default=None, help="base IRI for relative IRIs in the query")
    explain.add_argument("--profile", metavar="NAME", default="default",
                         help="engine profile whose report policies apply to the windows without a REPORT clause "
                              "(printed after the algebra; default: default)")
    _logging_options(explain, "sub_")
    explain.set_defaults(run=cmd_explain)

    sparql = commands.add_parser(
        "sparql", help="answer a SPARQL 1.1 query over RDF files (on Spark)", epilog=EXIT_CODES_HELP,
        formatter_class=formatter,
        description="Load the data files (default graph) and named graphs, answer the query, print the result.")
    sparql.add_argument("query", metavar="QUERY.rq", help="query file; '-' reads standard input")
    sparql.add_argument("--data", action="append", metavar="PATH",
                        help="RDF file for the default graph (.ttl .nt .nq .trig .rdf); repeatable")
    sparql.add_argument("--graph", action="append", metavar="IRI=PATH",
                        help="RDF file as the named graph IRI; repeatable")
    sparql.add_argument("--format", choices=["json", "xml", "csv", "tsv", "table", "ntriples", "nquads"],
                        help="result format: json, xml, csv, tsv, table for SELECT; json, xml, table for ASK; json, "
                             "table, ntriples, nquads for CONSTRUCT and DESCRIBE (nquads only, of the RDF formats, for "
                             "a CONSTRUCT with GRAPH blocks). Default: table on a terminal, else json, or ntriples "
                             "(nquads) for CONSTRUCT and DESCRIBE")
    sparql.add_argument("--base", metavar="IRI", default=None, help="base IRI for relative IRIs in the query")
    sparql.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    sparql.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting for the session, e.g. spark.driver.memory=8g; repeatable")
    _logging_options(sparql, "sub_")
    sparql.set_defaults(run=cmd_sparql)

    replay = commands.add_parser(
        "replay", help="replay continuous queries over recorded RDF streams", epilog=EXIT_CODES_HELP,
        formatter_class=formatter,
        description=_fill("Evaluate RSP-QL queries over recorded streams (TriG / N-Quads, one named graph per "
                          "element, timestamped by prov:generatedAtTime) at every evaluation instant, in time order.")
        + "\n\n" + _fill(
            "Formats: jsonl (the default when the output is not a terminal) one JSON object per instant of each "
            "query, every query form; table (the default on a terminal) a '# QUERY @ TIME' line and a table per "
            "instant, every form; csv / tsv SELECT queries only, one table for the whole replay: a single header "
            "'query,time,' then the union of the queries' variables in order of first appearance (a variable a "
            "query does not select is an empty cell; a variable named ?query or ?time is refused); trig CONSTRUCT / "
            "DESCRIBE queries only, an RDF stream readable by --stream; messages the same as an RDF Message Log "
            "(one message per instant; not for GRAPH blocks in a template). A query that does not fit the format "
            "is refused before Spark starts."))
    replay.add_argument("queries", nargs="+", metavar="QUERY.rq", help="query files (queries registering a stream "
                                                                       "feed the queries reading it); '-' reads "
                                                                       "standard input")
    replay.add_argument("--stream", action="append", metavar="IRI=PATH", help="a recorded stream; repeatable")
    replay.add_argument("--stream-format", metavar="FORMAT", default=None,
                        help="the format of every --stream file (default: from its extension, and an RDF Message "
                             "Log from its VERSION \"1.2-messages\" line): trig, nquads, ndjsonld, jsonld, "
                             "trig-messages, nquads-messages, turtle-messages, ntriples-messages; with --mapping: "
                             "csv, json, jsonl")
    replay.add_argument("--mapping", metavar="FILE", default=None,
                        help="a mapping file (YAML, docs/streams.md \"JSON and CSV records\"): every --stream file is "
                             "then a CSV, JSON or JSON Lines file of records (--stream-format csv, json or jsonl; "
                             "default: from the extension), each record mapped to an element on Spark's executors")
    _stamp_arguments(replay, "streams")
    replay.add_argument("--data", action="append", metavar="PATH", help="static data for the default graph")
    replay.add_argument("--graph", action="append", metavar="IRI=PATH", help="static named graph; repeatable")
    _version_arguments(replay)
    replay.add_argument("--until", metavar="T", help="last instant (number or ISO 8601 date-time; default: the "
                                                     "last element's timestamp); 'end' also reports the window still "
                                                     "open at the last element")
    replay.add_argument("--times", metavar="T1,T2,...", help="evaluate exactly at these instants")
    replay.add_argument("--profile", metavar="NAME", help="engine profile (default, csparql, cqels, sparqlstream, "
                                                          "rsp4j, rspql-star, epsparql-*): see docs/profiles.md")
    replay.add_argument("--format", choices=["jsonl", "table", "csv", "tsv", "trig", "messages"],
                        help="output format (default: table on a terminal, else jsonl); see above")
    replay.add_argument("--strict", action="store_true", help="fail on the first bad stream element instead of "
                                                              "reporting and skipping it")
    replay.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    replay.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting for the session, e.g. spark.driver.memory=8g; repeatable")
    _logging_options(replay, "sub_")
    replay.set_defaults(run=cmd_replay)

    run = commands.add_parser(
        "run", help="run continuous queries live, over streams as they arrive", epilog=EXIT_CODES_HELP,
        formatter_class=formatter,
        description=_fill("Evaluate RSP-QL queries over live streams (docs/live.md): each record is printed when "
                          "its instant becomes due, i.e. when every stream the query reads has an element later "
                          "than the instant by more than the allowed lateness. The records equal those of "
                          "'rspark replay' over the same elements. Stops at --until, after --max-seconds, when "
                          "every replay: source has ended, or on Ctrl-C; on stopping (but Ctrl-C) the instants up "
                          "to the last element seen are reported.")
        + "\n\n" + _fill(
            "Sources: DIR a directory watched for new TriG / N-Quads files (move files in whole); "
            "kafka://HOST:PORT/TOPIC[?format=trig|nquads&startingOffsets=earliest|latest&kafka.KEY=VALUE] the "
            "records of a Kafka topic, each a TriG or N-Quads document (Spark's Kafka connector, fetched once); "
            "tcp://HOST:PORT N-Quads lines from a TCP server; replay:PATH@SPEED a recorded stream written in at "
            "SPEED times its pace (numeric timestamps read as milliseconds); mqtt://HOST:PORT/TOPIC the messages "
            "on an MQTT topic (wildcards + and # allowed), each a TriG or N-Quads document, QoS 1; "
            "sse://HOST:PORT/PATH (sses:// over TLS) Server-Sent Events, resumed with Last-Event-ID; "
            "ws://HOST:PORT/PATH (wss:// over TLS) the messages of a WebSocket, each a JSON-LD document, RDF text or "
            "another rspark's CONSTRUCT record (no resume: messages sent while disconnected are not received). "
            "With --checkpoint DIR the sources' "
            "offsets, the buffered window content, each query's last reported instant and the consumption state of "
            "queries that consume events survive a restart, and --output FILE is written at most once per (query, "
            "instant)."))
    run.add_argument("queries", nargs="+", metavar="QUERY.rq", help="query files; '-' reads standard input")
    run.add_argument("--source", action="append", metavar="IRI=SOURCE",
                     help="a live stream: IRI=DIR, IRI=kafka://HOST:PORT/TOPIC, IRI=tcp://HOST:PORT, "
                          "IRI=replay:PATH@SPEED, IRI=mqtt://HOST:PORT/TOPIC, IRI=sse://HOST:PORT/PATH (Server-Sent "
                          "Events: another rspark's /queries/NAME/results, or RDF or JSON-LD events) or "
                          "IRI=ws://HOST:PORT/PATH (wss:// over TLS; each WebSocket message a JSON-LD document, RDF "
                          "text or another rspark's CONSTRUCT record); repeatable")
    run.add_argument("--history", action="append", metavar="IRI=PATH",
                     help="a recorded stream (TriG or N-Quads) a --source stream starts from: its elements come "
                          "before the live ones (once per --checkpoint); repeatable")
    run.add_argument("--lateness", metavar="D", default=None,
                     help="allowed lateness of every source (a number in the stream's unit or an ISO 8601 "
                          "duration; default 0): an element may arrive this far behind the latest one and still "
                          "count; a later one is late (counted, written to CHECKPOINT/late/)")
    _stamp_arguments(run, "sources")
    run.add_argument("--arrival-time", action="store_true",
                     help="elements of tcp://, kafka://, mqtt://, sse:// and ws:// sources without a timestamp get "
                          "their arrival time")
    run.add_argument("--mapping", action="append", metavar="IRI=FILE",
                     help="a mapping file (YAML, docs/streams.md \"JSON and CSV records\") for the --source of IRI: "
                          "a directory's .csv, .json and .jsonl files, or a kafka://, mqtt://, sse:// or ws:// "
                          "source's messages (JSON unless --payload-format or the Kafka address's format= says csv "
                          "or jsonl), are records, each mapped to an element; repeatable")
    run.add_argument("--payload-format", choices=["trig", "nquads", "json", "jsonl", "csv"], default=None,
                     help="the format of mqtt:// sources' messages (trig, nquads; default: told from each message), "
                          "and of the messages of mqtt://, sse:// and ws:// sources with a --mapping (json, jsonl, "
                          "csv; default json)")
    run.add_argument("--until", metavar="T", help="stop once every stream has reached T (its watermark: an element "
                                                  "at T plus the lateness arrived) and report up to T")
    run.add_argument("--max-seconds", metavar="N", type=float, default=None, help="stop after N seconds")
    run.add_argument("--checkpoint", metavar="DIR", default=None,
                     help="where live state goes (default: a temporary directory, removed at the end)")
    run.add_argument("--format", choices=["jsonl", "table", "csv", "tsv", "trig", "messages"],
                     help="output format (default: table on a terminal, else jsonl)")
    run.add_argument("--output", metavar="FILE", default=None,
                     help="append the records to FILE (jsonl, csv or tsv), or to the Kafka topic "
                          "kafka://HOST:PORT/TOPIC (jsonl, keyed by query and instant), instead of standard "
                          "output, each (query, instant) once across restarts; or mqtt://HOST:PORT/TOPIC: publish "
                          "each record's JSON as one message (QoS 1; {query} in TOPIC is the query's name)")
    run.add_argument("--trig-dir", metavar="DIR", default=None,
                     help="also write CONSTRUCT records as TriG stream elements into DIR (a directory another "
                          "rspark run can watch)")
    run.add_argument("--data", action="append", metavar="PATH", help="static data for the default graph")
    run.add_argument("--graph", action="append", metavar="IRI=PATH", help="static named graph; repeatable")
    _version_arguments(run)
    run.add_argument("--graph-refresh", action="append", metavar="IRI=SOURCE@PERIOD",
                        help="the named graph IRI read from SOURCE (a file, or an http(s) SPARQL endpoint) now and "
                             "every PERIOD (PT20S, 20s, or seconds); a changed content is a new version, valid "
                             "after the streams' watermark (RESCAN); repeatable")
    run.add_argument("--profile", metavar="NAME", help="engine profile (see docs/profiles.md)")
    run.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    run.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting; repeatable")
    _logging_options(run, "sub_")
    run.set_defaults(run=cmd_run)

    serve = commands.add_parser(
        "serve", help="serve live mode over HTTP: streams, graphs and queries as resources, results as "
                      "Server-Sent Events, a dashboard", epilog=EXIT_CODES_HELP, formatter_class=formatter,
        description=_fill("An HTTP service over one live engine (docs/service.md): PUT /streams/NAME declares a "
                          "stream, POST /streams/NAME pushes elements (TriG, N-Quads, JSON-LD), PUT /graphs/NAME "
                          "loads a static graph, PUT /queries/NAME registers a query, GET /queries/NAME/results "
                          "streams its records as Server-Sent Events (resumable with Last-Event-ID), /sparql "
                          "answers SPARQL 1.1 over the static graphs, /metrics gives Prometheus counters and / is "
                          "the dashboard. Bound to 127.0.0.1; with --token-file every request that changes state "
                          "needs 'Authorization: Bearer TOKEN', and another address is refused without one. "
                          "A stream may be fed by a source it names ({\"source\": URL}: mqtt://, sse://, "
                          "sses://, ws://, wss://, and kafka:// with --kafka). "
                          "With --checkpoint the streams, graphs, queries and their progress survive a restart."))
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8175, help="port (default 8175)")
    serve.add_argument("--token-file", metavar="FILE", default=None,
                       help="a file holding the bearer token (at least 16 characters) that PUT, POST and DELETE "
                            "requests must carry")
    serve.add_argument("--checkpoint", metavar="DIR", default=None,
                       help="where the service's declarations and live state go (default: a temporary directory, "
                            "removed at the end)")
    serve.add_argument("--max-body", type=int, default=16 * 1024 * 1024, metavar="BYTES",
                       help="largest request body (default 16 MiB; 413 above)")
    serve.add_argument("--max-queries", type=int, default=32, metavar="N",
                       help="most registered queries (default 32; 429 above)")
    serve.add_argument("--max-window-elements", type=int, default=100_000, metavar="N",
                       help="largest count window a query may declare (default 100000; 422 above)")
    serve.add_argument("--max-instants", type=int, default=10_000, metavar="N",
                       help="most evaluation instants one push may make due for a query (default 10000; 422 "
                            "above)")
    serve.add_argument("--keep-events", type=int, default=10_000, metavar="N",
                       help="records kept per query for clients that reconnect with Last-Event-ID "
                            "(default 10000)")
    serve.add_argument("--cors", action="append", metavar="ORIGIN",
                       help="allow cross-origin requests from ORIGIN (repeatable; none by default)")
    serve.add_argument("--data", action="append", metavar="PATH", help="static data for the default graph")
    serve.add_argument("--graph", action="append", metavar="IRI=PATH", help="static named graph; repeatable")
    serve.add_argument("--profile", metavar="NAME", help="default engine profile (see docs/profiles.md)")
    serve.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    serve.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark setting; repeatable")
    serve.add_argument("--kafka", action="store_true",
                       help="start Spark with its Kafka connector (fetched once), so that PUT /streams/NAME may "
                            "declare a kafka://HOST:PORT/TOPIC source; without it such a source is refused")
    _logging_options(serve, "sub_")
    serve.set_defaults(run=cmd_serve)
    return parser


# ------------------------------------------------------------------------------------------------------ main


def _error(message: str) -> None:
    print(f"rspark: error: {printable(message)}", file=sys.stderr, flush=True)


def _stop_unconnected_jvm() -> None:
    """After an interrupt while PySpark was launching its JVM: stop that JVM (a child of this process). PySpark
    removes the directory the JVM writes its port to, the JVM's main thread then ends without watching its standard
    input (which would end it with this process), and py4j's server thread keeps it running for ever. A JVM that
    PySpark connected to ends with this process and is left alone."""
    pyspark = sys.modules.get("pyspark")
    if pyspark is None or getattr(pyspark.SparkContext, "_gateway", None) is not None or not os.path.isdir("/proc"):
        return
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
            if int(stat[stat.rindex(")") + 2:].split()[1]) != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read()
            if b"java" in command or b"spark-submit" in command or b"spark-class" in command:
                log.debug("stopping the Spark JVM being launched (pid %s)", entry)
                os.kill(int(entry), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            pass


def _interrupted() -> int:
    _INTERRUPTS.quiet()
    _stop_unconnected_jvm()
    return _INTERRUPTS.report()


def _broken_pipe() -> int:
    """The reader of standard output went away (``rspark replay ... | head``): stop quietly. Python's flush of
    standard output at exit would fail again, so it is pointed at /dev/null."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_BROKEN_PIPE


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code. Errors a user can cause (:class:`RsparkError`) are one line on
    standard error; any other exception is a bug and propagates with its traceback."""
    _INTERRUPTS.received = False
    _INTERRUPTS.hard_exit = argv is None  # the program (not a call from Python code) may end the process at once
    _JVM_END["wait"] = True
    _INTERRUPTS.install()
    saved = (log.level, log.propagate, list(log.handlers))
    root = logging.getLogger()
    root_handlers = list(root.handlers)
    warnings_captured = warnings.showwarning is getattr(logging, "_showwarning", None)
    try:
        code = _run(argv)
    except KeyboardInterrupt:  # arrived while an error was being handled
        code = _interrupted()
    finally:
        _INTERRUPTS.restore()
        log.setLevel(saved[0])
        log.propagate = saved[1]
        log.handlers[:] = saved[2]
        if not _INTERRUPTS.hard_exit:  # a caller in the same process: its root logger and warnings as they were
            root.handlers[:] = root_handlers
            logging.captureWarnings(warnings_captured)
    if _INTERRUPTS.received and _INTERRUPTS.hard_exit:
        # ending the program now: Python's own exit would join the threads an interrupted job left behind
        _INTERRUPTS.exit_now()
    if _INTERRUPTS.hard_exit:
        _end_jvm()
    return code


# whether the program waits for its Spark JVM to end before it exits (_end_jvm): a command whose session holds
# nothing after it (a local replay or SPARQL query: no checkpoint, no cluster application) sets it to False
_JVM_END = {"wait": True}


def _jvm_end_not_awaited(master: str | None) -> None:
    """The command's local session holds nothing after it: the program exits without waiting for its JVM."""
    # delayed: the session module imports PySpark (the caller has just started Spark)
    from rspark.spark.session import is_local

    if is_local(master):
        _JVM_END["wait"] = False


def _end_jvm() -> None:
    """The program is ending: end the Spark JVM it launched and wait for it (rspark.spark.gateway.shutdown), so that
    the command ends when its JVM has ended, unless the command said its session holds nothing
    (:func:`_jvm_end_not_awaited`); Ctrl-C meanwhile ends the program at once."""
    gateway = sys.modules.get("rspark.spark.gateway")
    if gateway is None:
        return
    try:
        gateway.shutdown(wait=_JVM_END["wait"])
    except KeyboardInterrupt:
        _INTERRUPTS.exit_now()


def _run(argv: list[str] | None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_USAGE
        configure_logging(args.verbose + args.sub_verbose if hasattr(args, "sub_verbose") else args.verbose,
                          args.quiet or getattr(args, "sub_quiet", False))
        log.debug("rspark %s, Python %s", _version(), sys.version.split()[0])
        return args.run(args)
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return _broken_pipe()
    except RsparkError as exc:
        if _INTERRUPTS.received:
            return _interrupted()
        _error(str(exc))
        return exit_code(exc)
    except Exception as exc:
        if _INTERRUPTS.received:
            return _interrupted()
        if "pyspark" in sys.modules:
            # delayed: PySpark, loaded here only when a command started it
            from rspark.spark.failures import jvm_gone, memory_limit_error

            if jvm_gone(exc):  # the Spark JVM went away outside a query (while loading, or freeing the cache)
                err = memory_limit_error(exc, "the command", jvm=True)
                _error(str(err) if err is not None else f"lost the connection to the Spark JVM: {exc}")
                return EXIT_FAILURE
        print(f"rspark: internal error: this is a bug in rspark {_version()} (Python {sys.version.split()[0]}); "
              f"please report it with the traceback below", file=sys.stderr, flush=True)
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
