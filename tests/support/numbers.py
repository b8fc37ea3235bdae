"""Computed numbers written two ways: rspark writes XML Schema 1.0's canonical forms (decimal ``3.0``, double
``3.0E0``, as most W3C expected results and Jena do; a decimal without fraction digits, such as CEIL(2.5) or the sum
of two ``"3"^^xsd:decimal``, as ``3``), pyoxigraph its shortest forms (``3``). Comparing with pyoxigraph is
therefore by datatype and value, and rspark's form must be one of its own forms."""

from __future__ import annotations

import re
import struct
from decimal import Decimal

XSD = "http://www.w3.org/2001/XMLSchema#"
DECIMAL, DOUBLE, FLOAT = XSD + "decimal", XSD + "double", XSD + "float"
_TYPED = re.compile(r'"(.*)"\^\^<(.*)>')
CANONICAL = {
    DECIMAL: re.compile(r"-?(0|[1-9]\d*)(\.(0|\d*[1-9]))?"),
    DOUBLE: re.compile(r"-?([1-9]\.(0|\d*[1-9])E-?(0|[1-9]\d*)|0\.0E0)|INF|-INF|NaN"),
}
CANONICAL[FLOAT] = CANONICAL[DOUBLE]


def _value(lexical: str, datatype: str):
    if datatype == DECIMAL:
        return Decimal(lexical)
    v = float(lexical.replace("INF", "inf"))
    if v != v:
        return "NaN"
    return struct.unpack("f", struct.pack("f", v))[0] if datatype == FLOAT else v


def is_canonical(term: str | None) -> bool:
    """An encoded decimal / double / float literal in canonical form (other terms: True)."""
    m = _TYPED.fullmatch(term or "")
    if not m or m.group(2) not in CANONICAL:
        return True
    return CANONICAL[m.group(2)].fullmatch(m.group(1)) is not None


def same_number(mine: str | None, theirs: str | None) -> bool:
    """Equal encoded terms, or decimal / double / float literals of one datatype and value with rspark's
    (``mine``) in canonical form."""
    if mine == theirs:
        return True
    if mine is None or theirs is None:
        return False
    m, t = _TYPED.fullmatch(mine), _TYPED.fullmatch(theirs)
    if not (m and t) or m.group(2) != t.group(2) or m.group(2) not in CANONICAL:
        return False
    return is_canonical(mine) and _value(m.group(1), m.group(2)) == _value(t.group(1), t.group(2))


def canonical_lexical(lexical: str, datatype: str) -> str:
    """The XML Schema 1.0 canonical form of a decimal / double / float lexical form (other datatypes: as given),
    computed in Python: what rspark must write for a computed number of that value."""
    if datatype == DECIMAL:
        text = format(Decimal(lexical).normalize(), "f")
        if "." not in text:
            text += ".0"
        return "0.0" if text in ("-0.0", "0.0") else text
    if datatype not in (DOUBLE, FLOAT):
        return lexical
    v = _value(lexical, datatype)
    if v == "NaN":
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "INF" if v > 0 else "-INF"
    sign = "-" if str(v).startswith("-") else ""
    if v == 0:
        return sign + "0.0E0"
    if datatype == FLOAT:
        import numpy as np

        shortest = repr(float(np.format_float_positional(np.float32(abs(v)), unique=True, trim="-")))
    else:
        shortest = repr(abs(v))
    digits, exponent = Decimal(shortest).normalize().as_tuple()[1:]
    sig = "".join(map(str, digits))
    exp = exponent + len(sig) - 1
    return f"{sign}{sig[0]}.{sig[1:] or '0'}E{exp}"
