"""wirecheck/fuzz/harnesses/untraced.py: the whole reading of a frame-decoder target runs the decoder's code as
compiled, without atheris's tracing, and the traced code is back after it."""
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wirecheck.fuzz.harnesses.untraced import _MARK, Untraced

atheris = pytest.importorskip("atheris")
ROOT = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent('''
    def top(x):
        def inner(y):
            return y * 2 if y > 1 else -y
        return inner(x) + 1

    class Box:
        def method(self, x):
            return [v for v in range(x) if v % 2]

        @staticmethod
        def static(x):
            return x > 3

        @classmethod
        def klass(cls, x):
            return cls.__name__ * x

        @property
        def prop(self):
            return 7

    TABLE = (lambda x: x + 100,)
    NESTED = {1: (lambda x: x - 1, "kind")}

    class Spec:
        def __init__(self, make):
            self.make = make

    SPEC = Spec(lambda: 42)
''')


def traced(func) -> bool:
    return _MARK in func.__code__.co_consts


def functions(module):
    return [module.top, module.Box.method, module.Box.static, module.Box.klass.__func__,
            module.Box.prop.fget, module.TABLE[0], module.NESTED[1][0], module.Spec.__init__]


def results(module):
    box = module.Box()
    return (module.top(0), module.top(5), box.method(6), module.Box.static(4),
            module.Box.klass(2), box.prop, module.TABLE[0](1), module.NESTED[1][0](1))


@pytest.fixture
def module(tmp_path, monkeypatch):
    name = f"untraced_sample_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with atheris.instrument_imports(include=[name]):
        mod = importlib.import_module(name)
    yield mod
    sys.modules.pop(name, None)


def test_switches_every_function_to_its_compiled_code_and_back(module):
    before = {f: f.__code__ for f in functions(module)}
    assert all(map(traced, before))                     # atheris instrumented them all
    untraced = Untraced(module)
    assert len(untraced) == len(before)
    with untraced:
        assert not any(map(traced, before))
        for func, code in before.items():               # the same function, compiled plain
            assert func.__code__.co_qualname == code.co_qualname
            assert func.__code__.co_firstlineno == code.co_firstlineno
        got = results(module)
    assert got == (1, 11, [1, 3, 5], True, "BoxBox", 7, 101, 0)
    assert {f: f.__code__ for f in before} == before   # the traced code is back


def test_a_function_no_module_lists_is_switched_alone(module):
    make = module.SPEC.make                             # a lambda kept by an object
    assert traced(make) and traced(module.top)
    untraced = Untraced(make)
    assert len(untraced) == 1
    with untraced:
        assert not traced(make) and traced(module.top)
        assert make() == 42
    assert traced(make)


def test_the_traced_code_is_back_when_the_block_raises(module):
    before = {f: f.__code__ for f in functions(module)}
    with pytest.raises(ZeroDivisionError):
        with Untraced(module):
            module.top(1) / 0
    assert {f: f.__code__ for f in before} == before


def test_without_instrumentation_it_switches_nothing(tmp_path, monkeypatch):
    name = "untraced_plain_sample"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    try:
        untraced = Untraced(mod)
        assert len(untraced) == 0
        with untraced:
            assert results(mod) == (1, 11, [1, 3, 5], True, "BoxBox", 7, 101, 0)
    finally:
        sys.modules.pop(name, None)


#: A frame-decoder target, as it runs under atheris (its own process, as the campaign runs
#: it): every input of its seed corpus is read whole in its UNTRACED, and no instrumented code
#: runs there (a profiler sees every Python call of the whole reading: a module UNTRACED does
#: not name, or a function of one it names that it does not switch, would be seen); every
#: instrumented function of the modules UNTRACED names is switched, and those modules include
#: its decoder's.
CHECK = '''
import json, runpy, sys
from pathlib import Path
import wirecheck.fuzz.harnesses.target_setup as setup
from wirecheck.fuzz.harnesses import untraced as U
from wirecheck.fuzz.targets import TARGETS
setup.fuzz = lambda test_one_input: None         # import the target, do not start libFuzzer
target = runpy.run_path(f"wirecheck/fuzz/fuzz_{NAME}.py", run_name="__main__")
untraced, entered, ran_traced = target["UNTRACED"], [], set()

def profile(frame, event, arg):
    if event == "call" and U._is_traced(frame.f_code):
        ran_traced.add(f"{frame.f_code.co_filename}:{frame.f_code.co_qualname}")

enter, leave = U.Untraced.__enter__, U.Untraced.__exit__
def entering(self):
    entered.append(self)
    enter(self)
    sys.setprofile(profile)
    return self
def leaving(self, *exc):
    sys.setprofile(None)
    return leave(self, *exc)
U.Untraced.__enter__, U.Untraced.__exit__ = entering, leaving
inputs = [bytes(40)] + [p.read_bytes() for p in sorted(Path("wirecheck/fuzz/corpora", TARGETS[NAME].corpus).iterdir())]
for data in inputs:
    try:
        target["TestOneInput"](data)
    except Exception:
        pass                                     # a kept crash input: the reading ran anyway
assert set(map(id, entered)) == {id(untraced)} and len(entered) == len(inputs), len(entered)
modules = {sys.modules[f.__module__] for f in untraced._funcs}
missed = [f.__qualname__ for m in modules for f in U._functions(m)
          if U._is_traced(f.__code__) and f not in untraced._funcs]
print(json.dumps([len(untraced), sorted(m.__name__ for m in modules), missed, sorted(ran_traced)]))
'''
TARGETS = [("blipmq_decoder", "wirecheck.reference_impl.blipmq.codec"),
           ("rmqs_decoder", "wirecheck.reference_impl.rabbitmq_stream.codec"),
           ("mm2_decoder", "wirecheck.reference_impl.micromessage2.codec"),
           ("vibemq_decoder", "wirecheck.reference_impl.vibemq.codec"),
           ("signalr_json", "wirecheck.reference_impl.signalr.codec"),
           ("signalr_msgpack", "wirecheck.reference_impl.signalr.codec")]


@pytest.mark.parametrize("name, decoder_module", TARGETS)
def test_every_decoder_target_reads_whole_untraced(name, decoder_module):
    done = subprocess.run([sys.executable, "-c", f"NAME = {name!r}\n{CHECK}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    count, modules, missed, ran_traced = json.loads(done.stdout.strip().splitlines()[-1])
    assert count > 10, done.stdout
    assert decoder_module in modules and "wirecheck.reference_impl.core.decoding" in modules, done.stdout
    assert missed == [], done.stdout
    assert ran_traced == [], done.stdout
