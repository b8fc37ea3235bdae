"""py4j's class and static-method lookups kept once resolved (rspark.spark.lookups): a column function or a
Scala sequence built again costs no lookup (py4j's reflection commands), only its calls; static fields, packages and
missing members are asked every time."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark

REFLECTION = "r\n"  # py4j's reflection command: a lookup of a class or a member
RELEASE = "m\nd\n"  # py4j's memory command releasing a Java object Python dropped: sent whenever Python's collector
# frees one (an object of an earlier test's plan), so not counted


@pytest.fixture
def calls(spark, monkeypatch):
    """The commands this process sends to the JVM from now on, counted (but the releases of dropped objects)."""
    client = spark.sparkContext._gateway._gateway_client
    sent = []
    send = client.send_command

    def counted(command, *args, **kwargs):
        if not command.startswith(RELEASE):
            sent.append(command)
        return send(command, *args, **kwargs)

    monkeypatch.setattr(client, "send_command", counted)
    return sent


def test_a_column_function_and_a_sequence_cost_one_call_once_resolved(spark, calls):
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import _to_seq

    F.col("warm")
    _to_seq(spark.sparkContext, ["a"])
    del calls[:]
    F.col("x")
    assert len(calls) == 1  # the call of functions.col itself
    del calls[:]
    _to_seq(spark.sparkContext, ["a", "b"])
    assert not [c for c in calls if c.startswith(REFLECTION)]  # the list's, then PythonUtils.toSeq
    assert calls[-1].startswith("c\nz:org.apache.spark.api.python.PythonUtils\ntoSeq\n")
    jvm = spark.sparkContext._jvm
    assert "org.apache.spark.sql.functions" in jvm.__dict__ and "PythonUtils" in jvm.__dict__
    assert "col" in getattr(jvm, "org.apache.spark.sql.functions").__dict__


def test_fields_packages_and_missing_members_are_asked_every_time(spark, calls):
    from py4j.protocol import Py4JError

    jvm = spark.sparkContext._jvm
    integer = getattr(jvm, "java.lang.Integer")
    del calls[:]
    assert integer.MAX_VALUE == 2147483647 and integer.MAX_VALUE == 2147483647
    assert len(calls) == 2 and "MAX_VALUE" not in integer.__dict__  # a static field: its value is asked each time
    assert "java" not in jvm.__dict__ and type(jvm.java).__name__ == "JavaPackage"
    for _ in range(2):
        with pytest.raises(Py4JError, match="does not exist in the JVM"):
            integer.noSuchMember  # noqa: B018 - the lookup is the test
    assert "noSuchMember" not in integer.__dict__
    del calls[:]
    assert integer.parseInt("42") == 42 and integer.parseInt("7") == 7
    assert len(calls) == 3 and "parseInt" in integer.__dict__  # resolved once, then two calls
