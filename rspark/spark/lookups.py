"""Class and static-method lookups through py4j, kept once resolved.

py4j resolves ``jvm.SomeClass`` (``JVMView.__getattr__``) and ``SomeClass.someMethod`` (``JavaClass.__getattr__``)
with a round trip to the JVM at every access, and PySpark makes both for every column function it calls
(``getattr(jvm, "org.apache.spark.sql.functions").col``) and every Scala sequence it builds
(``jvm.PythonUtils.toSeq``): about a third of the calls rspark's plans make to the JVM (a live evaluation of a
windowed filter: 264 calls, 170 once these are kept). A class a JVM resolved stays that class for the JVM's life,
and a static method stays that method, so :func:`keep_lookups` makes the lookups keep what they resolve on the
object that asked: the JVM view (one per gateway, so a new JVM starts with nothing kept) or the class. Static fields
(whose values change), packages (a name may later resolve to a class of a jar added since) and failed lookups are
asked every time, as py4j does.
"""

from __future__ import annotations

import threading

from py4j.java_gateway import JavaClass, JavaMember, JVMView

__all__ = ["keep_lookups"]

_installed = threading.Lock()
_state = {"on": False}


def keep_lookups() -> None:
    """Make py4j keep the classes and static methods it resolves (once per process; module docstring)."""
    with _installed:
        if _state["on"]:
            return
        view_lookup, class_lookup = JVMView.__getattr__, JavaClass.__getattr__

        def view_getattr(self, name):
            value = view_lookup(self, name)
            if isinstance(value, JavaClass) and not name.startswith("_"):
                self.__dict__[name] = value  # found as an attribute from now on: no __getattr__, no round trip
            return value

        def class_getattr(self, name):
            value = class_lookup(self, name)
            if isinstance(value, JavaMember) or (isinstance(value, JavaClass)
                                                 and value._fqn == f"{self._fqn}${name}"):  # a method, an inner class
                self.__dict__[name] = value
            return value

        JVMView.__getattr__ = view_getattr
        JavaClass.__getattr__ = class_getattr
        _state["on"] = True
