"""A stand-in for pytest where it is not installed (python/gpu_test.sh uses it then): runs the
test_*.py files of a folder with the few pytest features they use (fixtures from conftest.py and
the test file, tmp_path, pytest.mark.parametrize / skipif / pytestmark, pytest.raises with
match, pytest.skip, pytest.importorskip, pytest.approx of scalars). Not a general pytest replacement.

    python3 python/tests/mini_runner.py python/tests [-k SUBSTRING]
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import itertools
import re
import shutil
import sys
import tempfile
import traceback
import types
from pathlib import Path


class Skipped(Exception):
    pass


class _Mark:
    def __init__(self, name, args, kwargs):
        self.name, self.args, self.kwargs = name, args, kwargs

    def __call__(self, fn):
        fn.__dict__.setdefault("_marks", []).append(self)
        return fn


class _MarkFactory:
    def __getattr__(self, name):
        return lambda *a, **k: _Mark(name, a, k)


def _fixture(fn=None, *, scope="function", **_):
    def wrap(f):
        f._fixture_scope = scope
        return f
    return wrap(fn) if fn is not None else wrap


@contextlib.contextmanager
def _raises(exc, match=None):
    try:
        yield
    except exc as e:
        if match is not None and not re.search(match, str(e)):
            raise AssertionError(f"{exc.__name__} raised, but {match!r} not in {str(e)!r}") from e
        return
    raise AssertionError(f"DID NOT RAISE {exc}")


class _Approx:
    def __init__(self, expected, rel=None, abs=None):  # noqa: A002 (pytest's keyword)
        self.expected, self.rel, self.abs = expected, rel, abs

    def __eq__(self, other):
        import math  # noqa: PLC0415

        rel = 1e-6 if self.rel is None and self.abs is None else (self.rel or 0.0)
        tol = max(rel * abs(self.expected), self.abs or (1e-12 if self.rel is None else 0.0))
        return math.isclose(other, self.expected, rel_tol=0, abs_tol=tol) or other == self.expected

    def __repr__(self):
        return f"approx({self.expected!r})"


def _skip(reason=""):
    raise Skipped(reason)


def _importorskip(name, *_, **__):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise Skipped(f"no {name}") from None


def install():
    m = types.ModuleType("pytest")
    m.fixture, m.mark, m.raises = _fixture, _MarkFactory(), _raises
    m.skip, m.importorskip, m.approx = _skip, _importorskip, _Approx
    sys.modules["pytest"] = m


def _fixtures(module):
    return {n: f for n, f in vars(module).items() if hasattr(f, "_fixture_scope")}


def main(argv):
    folder = Path(argv[0] if argv else Path(__file__).parent).resolve()
    pattern = argv[argv.index("-k") + 1] if "-k" in argv else ""
    install()
    sys.path.insert(0, str(folder))
    fixtures = _fixtures(importlib.import_module("conftest"))
    session = {}
    passed = failed = skipped = 0
    for path in sorted(folder.glob("test_*.py")):
        try:
            mod = importlib.import_module(path.stem)
        except Skipped as e:
            print(f"SKIP {path.name}: {e}")
            skipped += 1
            continue
        fx = dict(fixtures, **_fixtures(mod))
        module_cache = {}
        marks = getattr(mod, "pytestmark", [])
        marks = marks if isinstance(marks, list) else [marks]
        for name, fn in vars(mod).items():
            if not name.startswith("test_") or not callable(fn) or pattern not in name:
                continue
            all_marks = marks + fn.__dict__.get("_marks", [])
            skip = next((m for m in all_marks if m.name == "skipif" and m.args[0]), None)
            if skip is not None:
                print(f"SKIP {path.name}::{name}: {skip.kwargs.get('reason', '')}")
                skipped += 1
                continue
            params = [m for m in all_marks if m.name == "parametrize"]
            grids = [[(m.args[0].split(","), v) for v in m.args[1]] for m in params]
            for combo in itertools.product(*grids) if grids else [()]:
                kwargs, label = {}, []
                for names, values in combo:
                    values = values if len(names) > 1 else (values,)
                    kwargs.update(zip([n.strip() for n in names], values))
                    label.append("-".join(map(str, values)))
                tmp = None
                try:
                    for arg in inspect.signature(fn).parameters:
                        if arg in kwargs:
                            continue
                        if arg == "tmp_path":
                            tmp = Path(tempfile.mkdtemp(prefix="vs_test_"))
                            kwargs[arg] = tmp
                            continue
                        f = fx[arg]
                        cache = session if f._fixture_scope == "session" else module_cache
                        if f._fixture_scope == "function":
                            kwargs[arg] = f()
                        else:
                            if arg not in cache:
                                cache[arg] = f()
                            kwargs[arg] = cache[arg]
                    fn(**kwargs)
                    passed += 1
                except Skipped as e:
                    print(f"SKIP {path.name}::{name}[{','.join(label)}]: {e}")
                    skipped += 1
                except Exception:  # noqa: BLE001
                    print(f"FAIL {path.name}::{name}[{','.join(label)}]")
                    traceback.print_exc()
                    failed += 1
                finally:
                    if tmp is not None:
                        shutil.rmtree(tmp, ignore_errors=True)
    print(f"mini_runner: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
