"""Bytes as an executable or a database file holds them, given where a stream file is expected (issue 42)."""

from __future__ import annotations

# three kinds of line, in turn: NULs before a header, a DEL and bytes that are not UTF-8, terminal escape sequences
_LINES = (b"\x00\x00\x00\x02\x00ELF\x01\x01", b"\x7fELF\x02\x01\x01\xff\xfe\x00", b"\x1b[2J\x1b[31mpwned\x07\x00")


def binary_bytes(lines: int = 120) -> bytes:
    """``lines`` lines of binary content (every one a problem for the TriG and N-Quads parsers)."""
    return b"".join(_LINES[i % 3] + b"\n" for i in range(lines))
