"""Every public function, class and method of waygraph has a docstring.

Public: named in the ``__all__`` of waygraph or one of its non-underscore
modules (so names a package re-exports from its private modules count), and
for classes, their own methods and properties not starting with ``_``. A
method that overrides a documented one (a Store's ``get``, say) shares its
docstring, as ``help()`` shows it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from collections.abc import Iterator
from dataclasses import dataclass

import waygraph


def public_modules() -> Iterator[types.ModuleType]:
    yield waygraph
    for info in pkgutil.walk_packages(waygraph.__path__, "waygraph."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue  # private modules, and __main__ (which would run the CLI)
        yield importlib.import_module(info.name)


def _class_doc(cls: type) -> str:
    doc = (cls.__doc__ or "").strip()
    # A dataclass or NamedTuple without a docstring gets its signature as one.
    if doc.startswith(f"{cls.__name__}(") and doc.endswith(")"):
        return ""
    return doc


def _method_doc(cls: type, name: str) -> str:
    """The method's own docstring, or that of the nearest base class defining it."""
    for owner in cls.__mro__:
        found = vars(owner).get(name)
        if isinstance(found, staticmethod | classmethod):
            found = found.__func__
        doc = (getattr(found, "__doc__", None) or "").strip() if found is not None else ""
        if doc:
            return doc
    return ""


def undocumented(module: types.ModuleType) -> Iterator[str]:
    """Dotted names of ``module``'s public functions, classes and methods without a docstring."""
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not obj.__module__.startswith(module.__name__.split(".")[0]):
            continue  # re-exported from another package
        where = f"{obj.__module__}.{obj.__qualname__}"
        if inspect.isfunction(obj):
            if not (obj.__doc__ or "").strip():
                yield where
            continue
        if not _class_doc(obj):
            yield where
        for attr, value in vars(obj).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, staticmethod | classmethod):
                value = value.__func__
            if not (inspect.isfunction(value) or isinstance(value, property)):
                continue
            if not _method_doc(obj, attr):
                yield f"{where}.{attr}"


def test_every_public_function_class_and_method_has_a_docstring():
    missing = sorted({name for module in public_modules() for name in undocumented(module)})
    assert not missing, "public API without a docstring:\n  " + "\n  ".join(missing)


def test_the_walk_covers_the_package():
    checked = {module.__name__ for module in public_modules()}
    # Subpackages, their modules, and names re-exported from private modules.
    assert {"waygraph", "waygraph.store", "waygraph.events", "waygraph.planning"} <= checked
    assert {"waygraph.store.sqlite", "waygraph.server.models", "waygraph.cli.app"} <= checked
    assert "PlanningAgent" in waygraph.planning.__all__  # defined in planning._agent


def test_the_check_names_what_lacks_a_docstring():
    module = types.ModuleType("fake")

    def bare() -> None:
        pass

    def told() -> None:
        """Documented."""

    @dataclass
    class Record:
        value: int

        def shown(self) -> int:
            return self.value

        @property
        def size(self) -> int:
            return 1

    class Base:
        """Documented."""

        def run(self) -> None:
            """Run it."""

    class Child(Base):
        """Documented."""

        def run(self) -> None:
            pass  # shares Base.run's docstring

    for obj in (bare, told, Record, Base, Child):
        obj.__module__ = "fake"
    module.__dict__.update(bare=bare, told=told, Record=Record, Base=Base, Child=Child)
    module.__all__ = ["bare", "told", "Record", "Base", "Child"]
    assert sorted(undocumented(module)) == [
        "fake.test_the_check_names_what_lacks_a_docstring.<locals>.Record",
        "fake.test_the_check_names_what_lacks_a_docstring.<locals>.Record.shown",
        "fake.test_the_check_names_what_lacks_a_docstring.<locals>.Record.size",
        "fake.test_the_check_names_what_lacks_a_docstring.<locals>.bare",
    ]
