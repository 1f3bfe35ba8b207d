"""What defining one value type costs a cold start, by style: instructions a fresh interpreter
executes to define ten classes of four fields (two with defaults, a docstring each), less those
of the same program without them, divided by ten (callgrind, deterministic).

    PYTHONPATH=. .venv/bin/python benchmarks/value_types.py

The program's source is compiled in every run alike; a dataclass also compiles the methods it
generates (`__init__`, `__repr__`, `__eq__`, `__hash__`, and `__setattr__`/`__delattr__` when
frozen) each time its class is defined, which no bytecode cache keeps (docs/PERFORMANCE.md,
"The library's shape").
"""

from __future__ import annotations

import sys

from devkit.callgrind import count_instructions, require_valgrind

CLASSES = 10
_HEADER = "from __future__ import annotations\nimport dataclasses, typing\n"
_DOC = '    """One value."""\n'
_FIELDS = "    a: int\n    b: str\n    c: int | None = None\n    d: str = ''\n"
STYLES = {
    "frozen, slotted dataclass": "@dataclasses.dataclass(frozen=True, slots=True)\nclass C{i}:\n"
    + _DOC
    + _FIELDS,
    "frozen dataclass": "@dataclasses.dataclass(frozen=True)\nclass C{i}:\n" + _DOC + _FIELDS,
    "NamedTuple": "class C{i}(typing.NamedTuple):\n" + _DOC + _FIELDS,
    "slotted class": "class C{i}:\n"
    + _DOC
    + "    __slots__ = ('a', 'b', 'c', 'd')\n"
    + "    def __init__(self, a, b, c=None, d=''):\n"
    + "        self.a, self.b, self.c, self.d = a, b, c, d\n",
}


def per_class(template: str, floor: int) -> float:
    """Millions of instructions one class of `template` adds."""
    body = _HEADER + "".join(template.format(i=i) for i in range(CLASSES))
    return (count_instructions([sys.executable, "-c", body], env={}) - floor) / CLASSES / 1e6


def main() -> None:
    require_valgrind()
    floor = count_instructions([sys.executable, "-c", _HEADER], env={})
    print(f"Instructions to define one value type (M), Python {sys.version.split()[0]}:")
    print()
    print("| style | per class (M) |")
    print("|---|---:|")
    for style, template in STYLES.items():
        print(f"| {style} | {per_class(template, floor):.2f} |")


if __name__ == "__main__":
    main()
