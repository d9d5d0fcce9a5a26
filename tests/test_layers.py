"""The package's layers: a subpackage imports only from those below it, so the import graph has no back-edges.

    errors, _version  <  protocol  <  limit  <  store  <  stats  <  sim  <  run  <  report  <  ui

(sim sits below run because a run may start the simulator; the simulator itself knows only the protocol.)
"""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "hotdogbench_core"
LAYERS = ["errors", "_version", "protocol", "limit", "store", "stats", "sim", "run", "report", "ui"]
RANK = {name: (0 if name in ("errors", "_version") else LAYERS.index(name)) for name in LAYERS}


def imported_parts(path: Path) -> set[str]:
    """The top-level parts of hotdogbench_core a module imports (relative or absolute)."""
    rel = path.relative_to(PKG).with_suffix("").parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[:len(rel) - node.level])
                target = base + (node.module.split(".") if node.module else [])
                names = [target] if target else [[a.name] for a in node.names]
            elif node.module and node.module.startswith("hotdogbench_core."):
                names = [node.module.split(".")[1:]]
            else:
                continue
            out |= {n[0] for n in names if n}
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("hotdogbench_core.")}
    return out


def test_no_module_imports_from_a_layer_above_its_own():
    offences = []
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG).parts
        if len(parts) < 2 and path.stem not in RANK:
            continue  # the package's __init__ and __main__ sit on top of everything
        mine = parts[0] if len(parts) > 1 else path.stem
        for other in imported_parts(path):
            if other in RANK and RANK[other] > RANK[mine]:
                offences.append(f"{path.relative_to(PKG)} imports {other}")
    assert offences == []


def test_every_subpackage_has_a_layer():
    subpackages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages <= set(RANK)
