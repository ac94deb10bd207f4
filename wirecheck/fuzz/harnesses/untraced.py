"""Run the reference side of a decoder target on the code as compiled, without atheris's tracing.

A frame-decoder target decodes its input twice, whole and in reads, and the two must agree
(fuzz/harnesses/base.py). Both run the same decoder, and every edge the whole reading takes the read
by read one takes too (the same parsers, on the same frames, each parsed once per reading),
so tracing the whole reading guides nothing and cost a third of those targets' time: under
atheris every branch and comparison calls into the fuzzer.

:class:`Untraced` keeps, for every function of the modules it is given, the code object compiled
from the module's source next to the instrumented one atheris gave it, and ``with untraced:``
runs its block with the compiled code in place (then puts the instrumented code back, however
the block ends). Same source, same semantics: only the tracing is gone. Outside atheris (the
corpus replay under pytest) nothing is instrumented and it does nothing.
"""
from __future__ import annotations

import sys
import types
from itertools import repeat
from pathlib import Path

#: The constant atheris adds to every code object it instruments (atheris/instrument_bytecode.py).
_MARK = "__ATHERIS_INSTRUMENTED__"


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _in_table(table, depth: int = 2):
    """The values of a module-level tuple, list or dict (a dispatch table), and of the tuples,
    lists and dicts in it, ``depth`` levels down (``{5: (parse, Class)}``)."""
    for value in table.values() if isinstance(table, dict) else table:
        if isinstance(value, (tuple, list, dict)):
            if depth > 1:
                yield from _in_table(value, depth - 1)
        else:
            yield value


def _functions(module: types.ModuleType):
    """The module's own functions: module level (and in its module-level tuples, lists and
    dicts: dispatch tables), and methods (static, class, properties) of its classes."""
    def own(f):
        return isinstance(f, types.FunctionType) and f.__module__ == module.__name__

    for value in vars(module).values():
        if own(value):
            yield value
        elif isinstance(value, (tuple, list, dict)):     # dispatch tables: lambdas, parsers
            yield from filter(own, _in_table(value))
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for member in vars(value).values():
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    yield from filter(own, (member.fget, member.fset, member.fdel))
                elif own(member):
                    yield member


def _is_traced(code: types.CodeType) -> bool:
    return any(isinstance(c, str) and c == _MARK for c in code.co_consts)


class Untraced:
    """A context in which the functions of ``modules`` run their uninstrumented code. A
    function given among them (one no module lists: a lambda kept by some object, such as a
    registry's ``make_decoder``) is switched alone."""

    def __init__(self, *modules: types.ModuleType | types.FunctionType) -> None:
        funcs, traced, plain = [], [], []
        groups: dict[types.ModuleType, list] = {}
        for item in modules:
            if isinstance(item, types.FunctionType):
                groups.setdefault(sys.modules[item.__module__], []).append(item)
            else:
                groups.setdefault(item, []).extend(_functions(item))
        for module, members in groups.items():
            if not any(_is_traced(f.__code__) for f in members):
                continue                    # not instrumented (no atheris): nothing to switch
            source = Path(module.__file__).read_text(encoding="utf-8")
            compiled = {(c.co_qualname, c.co_firstlineno): c
                        for c in _code_objects(compile(source, module.__file__, "exec"))}
            for func in dict.fromkeys(members):                  # a function once, in order
                code = func.__code__
                twin = compiled.get((code.co_qualname, code.co_firstlineno))
                if twin is not None and _is_traced(code) and twin.co_freevars == code.co_freevars:
                    funcs.append(func)
                    traced.append(code)
                    plain.append(twin)
        self._funcs, self._traced, self._plain = funcs, traced, plain

    def __len__(self) -> int:
        """How many functions it switches (0 outside atheris)."""
        return len(self._funcs)

    def __enter__(self) -> "Untraced":
        # map over setattr: the switch is made in C, not one traced-free Python pass per function.
        list(map(setattr, self._funcs, repeat("__code__"), self._plain))
        return self

    def __exit__(self, *exc) -> None:
        list(map(setattr, self._funcs, repeat("__code__"), self._traced))
