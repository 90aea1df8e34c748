"""The layout shows the architecture: no import circles, no arrows back up the layers, no private
name imported across modules, an explicit ``__all__`` (a literal list of names that exist) in every
module. Read from the source with ``ast`` (nothing is imported), so a lazy import inside a function
counts like any other."""
import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "nuejax"

#: Packages and top-level modules from the bottom up: a module may import from its own layer or
#: below, never above. ``plotting`` sits above ``inference`` (it draws its results), the analyses,
#: validation and the demo above both, the command line on top.
LAYERS = [
    {"_internal", "errors", "constants", "precision", "runtime", "cache"},
    {"physics"},
    {"detector", "reweighting"},
    {"io"},
    {"model"},
    {"inference"},
    {"plotting"},
    {"analyses", "validation", "demo"},
    {"cli", "__main__"},
]


def _modules() -> dict:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path):
    """(target module, imported names) of every ``from nuejax... import`` in the file."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "nuejax" or target.startswith("nuejax."):
                yield target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("nuejax"):
                    yield a.name, []


def _edges() -> dict:
    """Module -> the nuejax modules it imports (a name that is a submodule counts as that module)."""
    out = {}
    for name, path in MODULES.items():
        targets = set()
        for target, names in _imports(name, path):
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            targets |= set(subs) if subs else {target}
        out[name] = {t for t in targets if t in MODULES and t != name}
    return out


def _layer(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "nuejax"
    for i, layer in enumerate(LAYERS):
        if key in layer:
            return i
    raise AssertionError(f"{module}: not in any layer of tests/test_architecture.py (add it)")


def test_no_import_cycles():
    edges = {k: {t for t in v if not MODULES[t].name == "__init__.py"} for k, v in _edges().items()}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_no_arrow_runs_back_up_the_layers():
    bad = []
    for module, targets in _edges().items():
        if module == "nuejax":
            continue
        for t in targets:
            if t != "nuejax" and _layer(t) > _layer(module):
                bad.append(f"{module} -> {t}")
    assert not bad, bad


def test_no_private_name_is_imported_across_modules():
    bad = []
    for name, path in MODULES.items():
        for target, names in _imports(name, path):
            for n in names:
                if n.startswith("_") and not n.startswith("__") and target != name:
                    bad.append(f"{name}: from {target} import {n}")
    assert not bad, bad


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.endswith("__main__")))
def test_every_module_lists_its_public_names(module):
    tree = ast.parse(MODULES[module].read_text())
    assigned = [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
    assert len(assigned) == 1, f"{module}: no (or several) __all__"
    value = assigned[0].value
    assert isinstance(value, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in value.elts), \
        f"{module}: __all__ must be a literal list of names, not computed"
    names = [e.value for e in value.elts]
    assert len(names) == len(set(names)), f"{module}: __all__ repeats a name"
    mod = importlib.import_module(module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"{module}: __all__ names {missing}, which the module lacks"
