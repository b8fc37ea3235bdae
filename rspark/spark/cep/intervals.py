"""Intervals of solutions: EP-SPARQL's interval joins (EP-SPARQL, Sec. 4.2) and the functions getSTARTTIME(),
getENDTIME(), getDURATION() (EP-SPARQL and RSEP-QL).

A solution that has an interval carries it in two hidden variables (``START``, ``END``: ticks, as longs; see
``rspark.cep.patterns``). In an EP-SPARQL pattern a triple pattern matches triple *occurrences* (a triple of one
element, dated by it: [ts, ts]), and every combination of two solutions spans both intervals: [min of starts, max
of ends] (EP-SPARQL's ⋈ on timed solutions). The operators differ only in the condition on the two intervals:

| written | EP-SPARQL | condition |
|---|---|---|
| juxtaposition | Join | none |
| ``{A} SEQ {B}`` | SeqJoin | A ends before B starts |
| ``{A} EQUALS {B}`` | EqJoin | same start, same end |
| ``{A} OPTIONALSEQ {B}`` | SeqRightJoin | as SEQ; B without a partner kept alone |
| ``{A} EQUALSOPTIONAL {B}`` | EqLeftJoin | as EQUALS; A without a partner kept alone |
| ``OPTIONAL`` | LeftJoin | the optional part ends no later than the mandatory one (timewise monotonic) |

Each is one Spark join on the instant and the shared variables with the interval condition in the join.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import Column
from pyspark.sql import functions as F

from rspark.algebra.expr import Call
from rspark.cep.patterns import END, INTERVAL_CALLS, START
from rspark.errors import NotSupportedError
from rspark.model.terms import XSD, Literal
from rspark.model.time import DurationError, TimeKind, parse_duration
from rspark.model.xsd import DURATION_TYPES
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import expression_nodes
from rspark.spark.sparql.solutions import Solutions, var_col

R_START, R_END = ".rstart", ".rend"
_COMPARISONS = {"<", ">", "<=", ">=", "=", "!="}
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}
DURATION_TICKS = "GETDURATION_TICKS"  # internal: getDURATION() as a number of ticks, to compare with a duration


def has_interval(sols: Solutions) -> bool:
    return START in sols.vars


def _long(sols_col: Column) -> Column:
    return sols_col.cast("long")


def interval_join(left: Solutions, right: Solutions, how: str = "inner", condition=None, temporal=None) -> Solutions:
    """Join (``how`` inner or left) with intervals: the result spans both (min start, max end); ``temporal(l_start,
    l_end, r_start, r_end)`` is an extra condition on the two intervals (long columns), ``condition(resolve)`` one on
    the merged variables (an OPTIONAL's filter). Solutions without an interval (static data) leave it unchanged."""
    has_l, has_r = has_interval(left), has_interval(right)
    if has_r:
        df = right.df.withColumnRenamed(var_col(START), var_col(R_START)).withColumnRenamed(var_col(END),
                                                                                            var_col(R_END))
        names = tuple({START: R_START, END: R_END}.get(v, v) for v in right.vars)
        bound = frozenset({START: R_START, END: R_END}.get(v, v) for v in right.bound)
        right = replace(right, df=df, vars=names, bound=bound)

    def full(resolve):
        parts = []
        if condition is not None:
            c = condition(resolve)
            if c is not None:
                parts.append(c)
        if temporal is not None and has_l and has_r:
            parts.append(temporal(_long(resolve(START)), _long(resolve(END)), _long(resolve(R_START)),
                                  _long(resolve(R_END))))
        elif temporal is not None:
            parts.append(F.lit(False))  # a solution without an interval is in no temporal relation
        out = None
        for p in parts:
            out = p if out is None else (out & p)
        return out

    out = S.join(left, right, how, full if (condition is not None or temporal is not None) else None)
    if not has_r:
        return out
    df = out.df
    if has_l:
        df = df.withColumn(var_col(START), F.least(_long(F.col(var_col(START))), _long(F.col(var_col(R_START))))) \
            .withColumn(var_col(END), F.greatest(_long(F.col(var_col(END))), _long(F.col(var_col(R_END)))))
        df = df.drop(var_col(R_START), var_col(R_END))
        names = tuple(v for v in out.vars if v not in (R_START, R_END))
    else:
        df = df.withColumnRenamed(var_col(R_START), var_col(START)).withColumnRenamed(var_col(R_END), var_col(END))
        names = tuple({R_START: START, R_END: END}.get(v, v) for v in out.vars)
    bound = frozenset(v for v in names if v in out.bound or (v in (START, END) and START in left.bound))
    return replace(out, df=df, vars=names, bound=bound)


def seq_before(l1, l2, r1, r2) -> Column:
    return l2 < r1


def same_interval(l1, l2, r1, r2) -> Column:
    return (l1 == r1) & (l2 == r2)


def ends_no_later(l1, l2, r1, r2) -> Column:
    return r2 <= l2


# --------------------------------------------------------------------------------------- getDURATION() and friends


def rewrite_durations(expr, timeline):
    """``getDURATION() < "P30D"^^xsd:duration`` (either side, any comparison) as a comparison of tick counts:
    durations are compared by length (date-time streams: milliseconds; a duration over a numeric stream reads the
    stream's numbers as milliseconds, as window ranges do)."""
    if not isinstance(expr, Call):
        return expr
    args = tuple(rewrite_durations(a, timeline) for a in expr.args)
    if expr.name in _COMPARISONS and len(args) == 2:
        a, b = args
        for x, y, name in ((a, b, expr.name), (b, a, _FLIP[expr.name])):
            if isinstance(x, Call) and x.name == "GETDURATION" and isinstance(y, Literal) and \
                    y.datatype in DURATION_TYPES:
                try:
                    ticks = timeline.duration(parse_duration(y.lexical), "duration")
                except (DurationError, ValueError) as exc:
                    raise NotSupportedError(f"getDURATION() compared with {y.lexical!r}: {exc}") from None
                return Call(name, (Call(DURATION_TICKS), Literal(str(ticks), XSD + "integer")))
    return Call(expr.name, args)


def interval_calls(expr, out: list) -> list:
    """The getSTARTTIME() / getENDTIME() / getDURATION() calls of an expression."""
    return expression_nodes(expr, lambda x: isinstance(x, Call) and (x.name in INTERVAL_CALLS
                                                                         or x.name == DURATION_TICKS), out)


def interval_values(sols: Solutions, calls: list, timeline, fresh, now_sql) -> tuple[Solutions, dict[int, str]]:
    """A column per call with its value for each solution: getSTARTTIME() / getENDTIME() in NOW()'s form (an
    xsd:dateTime, or the stream's number), getDURATION() an xsd:duration (date-time streams) or a number."""
    if not has_interval(sols):
        raise NotSupportedError("getSTARTTIME(), getENDTIME() and getDURATION() read the interval of a matched event: "
                                "use them in the group of a MATCH or of an EP-SPARQL pattern (SEQ, EQUALS, "
                                "OPTIONALSEQ, EQUALSOPTIONAL) over a stream")
    start, end = f"CAST(`{var_col(START)}` AS BIGINT)", f"CAST(`{var_col(END)}` AS BIGINT)"
    flags: dict[int, str] = {}
    df = sols.df
    for call in calls:
        col = fresh("iv")
        if call.name == "GETSTARTTIME":
            sql = now_sql(timeline, start)
        elif call.name == "GETENDTIME":
            sql = now_sql(timeline, end)
        elif call.name == DURATION_TICKS:
            sql = f"concat('\"', CAST({end} - {start} AS STRING), '\"^^<{XSD}integer>')"
        elif timeline.kind is TimeKind.DATETIME:
            sql = duration_sql(f"({end} - {start})")
        else:
            sql = now_sql(timeline, f"({end} - {start})")
        df = df.withColumn(col, F.expr(sql))
        flags[id(call)] = col
    return sols.with_df(df), flags


def duration_sql(ms: str) -> str:
    """An xsd:duration literal of a non-negative number of milliseconds, in the canonical form of
    xsd:dayTimeDuration (``P1DT2H3M4.5S``, ``PT0S``)."""
    d, h = f"CAST(({ms}) DIV 86400000 AS STRING)", f"CAST((({ms}) % 86400000) DIV 3600000 AS STRING)"
    m = f"CAST((({ms}) % 3600000) DIV 60000 AS STRING)"
    s = (f"regexp_replace(regexp_replace(CAST(CAST((({ms}) % 60000) AS DECIMAL(20, 0)) / 1000 AS STRING), "
         f"'0+$', ''), '[.]$', '')")
    return (f"concat('\"P', CASE WHEN ({ms}) >= 86400000 THEN concat({d}, 'D') ELSE '' END, "
            f"CASE WHEN ({ms}) % 86400000 = 0 AND ({ms}) > 0 THEN '' ELSE concat('T', "
            f"CASE WHEN ({ms}) % 86400000 >= 3600000 THEN concat({h}, 'H') ELSE '' END, "
            f"CASE WHEN ({ms}) % 3600000 >= 60000 THEN concat({m}, 'M') ELSE '' END, "
            f"CASE WHEN ({ms}) % 60000 > 0 OR ({ms}) = 0 THEN concat({s}, 'S') "
            f"ELSE '' END) END, '\"^^<{XSD}duration>')")
