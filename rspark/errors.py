"""Errors users see. Every message names the problem and, for input, where it is (file, line, element).

Every error a user can cause derives from :class:`RsparkError`: the ones defined here, and the query front end's
(``QuerySyntaxError`` and its ``QueryError``, ``DurationError``, ``WindowError``, ``ProfileError``, ``ReportError``),
which also derive from ``ValueError``. Any other exception out of rspark is a bug. The command line reports an
RsparkError as one line, ``rspark: error: ...``, with exit code 2 for a bad query or bad arguments and 1 for bad
data or a runtime failure (``rspark.cli.exit_code``).

This module imports nothing of rspark (every layer imports it).
"""

from __future__ import annotations

import errno
import re

# what a terminal would act on rather than show: C0 controls, DEL, C1 controls, line and paragraph separators,
# bidirectional formatting controls (which reorder the rest of the line) and lone surrogates (undecodable bytes)
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match) -> str:
    ch = match.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def printable(text: str) -> str:
    """``text`` (input quoted by a message: a token, a lexical form, a file name, a parser's message about them)
    safe to print on one line of a terminal: every character a terminal acts on is written as an escape (``\\x00``,
    ``\\x1b``, ``\\t``, ``\\n``, ``\\u202e``). Nothing else changes, backslashes included, so a message escaped
    twice is the same (an escape written in the input reads like an escaped character)."""
    return _UNPRINTABLE.sub(_escape, text)


class RsparkError(Exception):
    """Base class of the errors a user can cause (bad query, bad data, resources); not of rspark's bugs."""


class NotSupportedError(RsparkError):
    """A feature the query uses that rspark does not implement; raised instead of giving a wrong answer."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not supported: {what}")
        self.what = what


class DataError(RsparkError):
    """Malformed input data: the message names the file, line (and column or element when known). The message, the
    file name and the element are :func:`printable` (they quote the input)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, element: str | None = None) -> None:
        message = printable(message)
        element = printable(element) if element is not None else None
        where = ""
        if file is not None:
            where = printable(str(file))
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        if element is not None:
            message = f"{message} (element {element})"
        super().__init__(where + message)
        self.file, self.line, self.column, self.element = file, line, column, element
        self.reason = message


class MoreProblems(DataError):
    """The last entry of a list of a file's problems cut at a limit: ``count`` more problems (``what``: of which
    kind) of that file, not listed."""

    def __init__(self, count: int, what: str, *, file: str | None = None) -> None:
        super().__init__(f"{count} more {what} not listed", file=file)
        self.count, self.what = count, what


WARNINGS_PER_FILE = 10  # the problems of one input file that the command line prints (-v: all)


def summarised(errors: list, limit: int | None, hint: str = "") -> list[str]:
    """The lines that report ``errors`` (DataErrors of one or several files, in file order): the first ``limit``
    of each file, then one line ``... and K more bad elements in FILE`` that counts the others (those listed, and
    those a :class:`MoreProblems` entry counts), followed by `` (hint)`` when some listed ones were left out; every
    one when ``limit`` is None."""
    by_file: dict = {}
    for err in errors:
        listed, more = by_file.setdefault(getattr(err, "file", None), ([], [0]))
        if isinstance(err, MoreProblems):
            more[0] += err.count
        else:
            listed.append(err)
    lines = []
    for file, (listed, more) in by_file.items():
        shown = listed if limit is None else listed[:limit]
        lines.extend(str(err) for err in shown)
        left = len(listed) - len(shown) + more[0]
        if left:
            lines.append(f"... and {left} more bad element{'s' if left > 1 else ''} in "
                         f"{printable(str(file)) if file is not None else 'the input'}"
                         + (f" ({hint})" if hint and len(listed) > len(shown) else ""))
    return lines


class MemoryLimitError(RsparkError):
    """Spark ran out of memory (the JVM's heap, or a Python worker's): the data a query needs at once did not fit."""


class SparkStoppedError(RsparkError):
    """The Spark JVM stopped while a query ran (for another reason than running out of memory)."""


class InputError(RsparkError, ValueError):
    """An argument that cannot be used as given (a graph name that is not an IRI, a file of a format the
    operation does not read); the message says what is expected."""


class MissingFileError(DataError, FileNotFoundError):
    """A file to load that does not exist (a :class:`DataError`, and a ``FileNotFoundError``)."""

    def __init__(self, path: str) -> None:
        super().__init__("no such file", file=path)
        self.errno, self.strerror, self.filename = errno.ENOENT, "no such file", path

    def __str__(self) -> str:  # the DataError's text ("PATH: no such file"), not OSError's "[Errno 2] ..."
        return self.args[0]
