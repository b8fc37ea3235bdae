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
