"""The Spark compiler's operator table: dispatch on the operator's type, with overrides by subclasses (no Spark
session is started: the table is a class attribute)."""

import pytest

from rspark.algebra import ops
from rspark.errors import NotSupportedError
from rspark.model.terms import Variable
from rspark.spark.sparql.compiler import Compiler, compiles
from rspark.spark.streaming.r2r import StreamCompiler


def test_every_operator_of_the_algebra_has_a_compilation():
    static = {ops.BGP, ops.PathPattern, ops.Table, ops.Join, ops.LeftJoin, ops.Filter, ops.Union, ops.Minus,
              ops.Graph, ops.Service, ops.Extend, ops.Group, ops.OrderBy, ops.Project, ops.Distinct, ops.Reduced,
              ops.Slice}
    assert static <= set(Compiler._compilers)
    assert not {ops.Window, ops.IntervalJoin, ops.Match} & set(Compiler._compilers)
    assert static | {ops.Window, ops.IntervalJoin, ops.Match} <= set(StreamCompiler._compilers)


def test_a_subclass_method_of_the_same_name_overrides_and_a_marked_one_adds():
    assert Compiler._compilers[ops.BGP] is Compiler._op_BGP
    assert StreamCompiler._compilers[ops.BGP] is StreamCompiler._op_BGP
    assert StreamCompiler._op_BGP is not Compiler._op_BGP
    assert StreamCompiler._compilers[ops.Union] is Compiler._op_Union
    assert StreamCompiler._compilers[ops.Window] is StreamCompiler._op_Window


def test_compile_calls_the_method_of_the_operators_type():
    class Probe(Compiler):
        def _op_Union(self, op, ctx):  # an override, unmarked: it inherits the base's registration
            return ("union", op, ctx)

        @compiles(ops.Window)
        def window(self, op, ctx):
            return ("window", op, ctx)

    probe = object.__new__(Probe)  # no Spark session: compile is only dispatch here
    union = ops.Union(ops.UNIT, ops.UNIT)
    window = ops.Window(Variable("w"), ops.UNIT)
    assert probe.compile(union, "ctx") == ("union", union, "ctx")
    assert probe.compile(window, "ctx") == ("window", window, "ctx")
    with pytest.raises(NotSupportedError, match="the Window operator"):
        object.__new__(Compiler).compile(window, "ctx")
