"""The import rules of docs/DESIGN.md, as import-linter contracts (.importlinter): lower
layers never import evaluation/agents/baselines/dataset_building; agents never import
evaluation; evaluation/'s modules in layers. Runs in `make test`; `lint-imports` from the
repository root prints the same. And no import cycle anywhere in the package, imports
inside functions included (a cycle hidden in a function is still a cycle)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_import_contracts_are_kept():
    # no_logo: import-linter >= 2.14 (Python 3.10+); older ones have no logo to hide
    code = (
        "import inspect, sys\nfrom importlinter.cli import lint_imports\n"
        "extra = {'no_logo': True} if 'no_logo' in inspect.signature(lint_imports).parameters else {}\n"
        "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True, **extra))\n"
    )
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in res.stdout


def _cycles(edges):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    # the check below can fail: a -> b -> c -> a is one cycle, d hangs off it
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package():
    # grimp (import-linter's graph) reads every import statement, those inside functions too
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("habitat_mosnav")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    cycles = _cycles(edges)
    where = [
        f"{a} -> {b} (line {d['line_number']}: {d['line_contents']})"
        for cycle in cycles
        for a in cycle
        for b in sorted(edges[a] & set(cycle))
        for d in graph.get_import_details(importer=a, imported=b)[:1]
    ]
    assert not cycles, "import cycles: " + "; ".join(where)
