"""Errors users see. Every message names the problem and, for input, where it is (file, line, element)."""

from __future__ import annotations


class RsparkError(Exception):
    """Base class of rspark's own errors (query syntax errors derive from ValueError instead)."""


class NotSupportedError(RsparkError):
    """A feature the query uses that rspark does not implement; raised instead of giving a wrong answer."""

    def __init__(self, what: str) -> None:
        super().__init__(f"not supported: {what}")
        self.what = what


class DataError(RsparkError):
    """Malformed input data: the message names the file, line (and column or element when known)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, element: str | None = None) -> None:
        where = ""
        if file is not None:
            where = str(file)
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


class MemoryLimitError(RsparkError):
    """Spark ran out of memory (the JVM's heap, or a Python worker's): the data a query needs at once did not fit."""


_OUT_OF_MEMORY = ("java.lang.OutOfMemoryError", "Java heap space", "GC overhead limit exceeded", "MemoryError")


def memory_limit_error(exc: BaseException, what: str) -> MemoryLimitError | None:
    """A :class:`MemoryLimitError` for ``exc`` when it is an out-of-memory failure reported by Spark (whatever
    wrapper PySpark puts around it), else None. ``what``: what was running."""
    try:
        text = str(exc)
    except Exception:  # an exception whose text needs a JVM that is gone
        text = repr(exc)
    hit = next((marker for marker in _OUT_OF_MEMORY if marker in text), None)
    if hit is None:
        return None
    return MemoryLimitError(
        f"{what} ran out of memory ({hit}): the windows' content or the answers held at once did not fit. Use a "
        "smaller window RANGE or fewer evaluation instants (--until, --times), or give Spark more memory "
        "(Engine(conf={'spark.driver.memory': '8g'}), or --conf for spark-submit); after a JVM out-of-memory "
        "error the Spark session may have to be restarted.")
