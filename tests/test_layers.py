"""The package layers (issue 36): no import cycles between modules, and each layer imports only
the layers below it, so the tree tells a newcomer where a feature lives and what it may use."""

from __future__ import annotations

import ast
from pathlib import Path

from xpfilt.paths import repo_root

#: Folder -> the package it installs as (pyproject.toml's package-dir).
FOLDERS = {"xpfilt": "xpfilt", "hdl": "xpfilt.hdl", "sim": "xpfilt.sim", "boards": "xpfilt.boards"}

#: Layer -> the layers it may import (besides itself), bottom to top.
ALLOWED = {
    "xpfilt.paths": set(),
    "xpfilt.lang": set(),
    "xpfilt.software": {"xpfilt.lang"},
    "xpfilt.hwspec": {"xpfilt.lang"},
    "xpfilt.workloads": {"xpfilt.lang", "xpfilt.software"},
    "xpfilt.compiler": {"xpfilt.lang", "xpfilt.hwspec"},
    "xpfilt.model": {"xpfilt.lang", "xpfilt.software", "xpfilt.hwspec", "xpfilt.compiler"},
    "xpfilt.hdl": {"xpfilt.lang", "xpfilt.hwspec", "xpfilt.compiler"},
    "xpfilt.engines": {"xpfilt.lang", "xpfilt.software", "xpfilt.compiler", "xpfilt.model"},
    "xpfilt.eda": set(),
    "xpfilt.sim": {
        "xpfilt.lang",
        "xpfilt.software",
        "xpfilt.hwspec",
        "xpfilt.compiler",
        "xpfilt.model",
        "xpfilt.hdl",
    },
    "xpfilt.scale": {
        "xpfilt.paths",
        "xpfilt.lang",
        "xpfilt.software",
        "xpfilt.workloads",
        "xpfilt.compiler",
        "xpfilt.model",
        "xpfilt.hdl",
        "xpfilt.engines",
        "xpfilt.eda",
    },
    "xpfilt.verify": {
        "xpfilt.paths",
        "xpfilt.lang",
        "xpfilt.software",
        "xpfilt.hwspec",
        "xpfilt.workloads",
        "xpfilt.compiler",
        "xpfilt.model",
        "xpfilt.hdl",
        "xpfilt.engines",
        "xpfilt.sim",
        "xpfilt.scale",
    },
}
#: The top: the command line, the demo and the board feature may use every layer.
TOP = {"xpfilt", "xpfilt.cli", "xpfilt.demo", "xpfilt.boards"}


def _modules() -> dict[str, Path]:
    root = repo_root()
    modules = {}
    for folder, package in FOLDERS.items():
        for path in (root / folder).rglob("*.py"):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere (function bodies included)."""
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.level == 0, f"{path}: relative import (the project imports absolutely)"
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _layer(module: str) -> str:
    parts = module.split(".")
    for n in (2, 1):
        candidate = ".".join(parts[:n])
        if candidate in ALLOWED or candidate in TOP:
            return candidate
    raise AssertionError(f"{module} is in no layer: add its package to ALLOWED or TOP")


def test_no_module_imports_itself_through_others():
    graph = _imports(_modules())
    cycles = []
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert cycles == []


def test_each_layer_imports_only_the_layers_below_it():
    graph = _imports(_modules())
    wrong = sorted(
        f"{a} imports {b}"
        for a, deps in graph.items()
        for b in deps
        if _layer(a) not in TOP and _layer(b) != _layer(a) and _layer(b) not in ALLOWED[_layer(a)]
    )
    assert wrong == []
