"""The package's shape: the public API is pinned and dependencies point one way."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import agent_eval

PUBLIC = [
    "AgentEvalError", "AgentLoadError", "AgentReply", "AttemptResult", "Checks", "ConfigError",
    "ExtraMissingError", "LoadedSuite", "ModelEndpointError", "Prices", "ResultsError",
    "RunConfig", "RunReport", "Suite", "SuiteError", "Task", "__version__", "classify",
    "execute", "load_suite", "prepare", "score_attempt", "MockModelServer", "load_script",
    "LocalModelServer", "load_results", "compare_runs", "summarise_run",
]  # fmt: skip


def test_public_api_is_pinned() -> None:
    assert sorted(agent_eval.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(agent_eval, name) is not None


# --- The layering: every import of the package, read from the source with ast -------

SRC = Path(agent_eval.__file__).parent
DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
SUBPACKAGES = ("run.executors",)
"""Packages inside a package that are units of their own in the table."""
ROOT_CONSTANTS = frozenset({"__version__", "STARTUP_PATH", "SHIPPED_SUITES"})
"""Names any module may take from the package root: constants, which import nothing."""

ALLOWED: dict[str, frozenset[str]] = {
    unit: frozenset(targets.split())
    for unit, targets in {
        # the leaves
        "errors": "",
        "processes": "",
        "lazy": "",
        "records": "errors",
        "redaction": "errors",
        "web": "errors",
        "trajectory": "errors records",
        "sandbox": "errors processes lazy",
        # what an attempt is made of
        "suite": "errors records",
        "score": "errors records processes sandbox lazy",
        "tools": "errors records processes lazy",
        "models": "errors records web lazy",
        # the owners of the files a run leaves, and what reads them
        "results": "errors records score trajectory lazy",
        "trace": "errors records results trajectory lazy",
        "interop": "errors records results trajectory lazy",
        "replay": "errors records redaction results suite trajectory web lazy",
        "report": "errors records interop results score trajectory lazy",
        "viewer": "errors records interop report results score suite trajectory web",
        # the agents, one run, several runs
        "agents": "errors records processes redaction models score tools trace trajectory lazy",
        "run.executors": "errors records processes redaction web sandbox tools models results "
        "replay agents run.attempt run.ctrl_c run.prepared run.settings run.workspace",
        "run": "errors records redaction trajectory sandbox suite score tools models results "
        "replay agents run.executors lazy",
        "workflows": "errors records redaction trajectory suite score models results replay "
        "report agents run lazy",
        "starter": "errors records suite agents",
        # the command line, and the package's face
        "cli": "errors records processes redaction web trajectory sandbox suite score tools "
        "models results trace interop replay report viewer agents run workflows starter",
        "__main__": "cli",
        "agent_eval": "errors records processes redaction web trajectory sandbox suite score "
        "tools models results trace interop replay report viewer agents run.executors run "
        "workflows starter cli",
    }.items()
}  # fmt: skip
"""Unit -> what it may import: units (a package, a top-level module, a subpackage named
in SUBPACKAGES, or ``agent_eval`` for the package's own __init__), or single modules of
another unit. docs/architecture.md shows this table."""


@dataclass(frozen=True)
class Edge:
    """One import: which module, at which line, names which module of the package."""

    source: str
    line: int
    target: str
    named: bool = False
    """Named in a string (for importlib), not an import statement."""

    def __str__(self) -> str:
        direction = f"{unit(self.source)} -> {unit(self.target)}"
        return f"{self.source}:{self.line} imports {self.target} ({direction})"


def unit(module: str) -> str:
    """The table's unit of a module: ``agent_eval.run.executors.pool`` -> ``run.executors``."""
    parts = module.split(".")[1:]
    if not parts:
        return "agent_eval"
    for sub in SUBPACKAGES:
        if parts[: sub.count(".") + 1] == sub.split("."):
            return sub
    return parts[0]


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` by dotted name (suites are data)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if "suites" in parts:
            continue
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def package_of(name: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def resolve(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from ... import`` statement names, relative ones made absolute."""
    if not node.level:
        return node.module or ""
    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*anchor, *([node.module] if node.module else [])])


def imports(name: str, path: Path, known: Collection[str]) -> Iterator[Edge]:
    """Every import in a module's source, at any depth: in functions, under ``if
    TYPE_CHECKING:``, relative ones, and dotted module names in strings (as
    importlib.import_module is given them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = package_of(name, path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve(node, package)
            targets = []
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    targets.append(f"{base}.{alias.name}")  # a submodule
                elif base == "agent_eval" and alias.name in ROOT_CONSTANTS:
                    continue
                else:
                    targets.append(base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = node.value.partition(":")[0]
            targets = [named] if named.startswith("agent_eval.") and named in known else []
        else:
            continue
        for target in targets:
            if target == "agent_eval" or target.startswith("agent_eval."):
                yield Edge(name, node.lineno, target, isinstance(node, ast.Constant))


def refused(root: Path) -> list[str]:
    """Every import under ``root`` that crosses units in a direction ALLOWED does not list."""
    found = modules(root)
    bad = []
    for name, path in found.items():
        for edge in imports(name, path, found):
            source, target = unit(edge.source), unit(edge.target)
            if source == target:
                continue
            allowed = ALLOWED.get(source, frozenset())
            if target not in allowed and edge.target.removeprefix("agent_eval.") not in allowed:
                bad.append(str(edge))
    return bad


PUBLIC_MODULES = frozenset({"agent_eval.agents.multi_agent"})
"""Modules another package may import by path: a builtin agent's module, which the
starter's entry-point file re-exports as a user's agent file would."""


def public_names(path: Path) -> frozenset[str]:
    """A face's ``__all__``, read from its source."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def bypassed(root: Path) -> list[str]:
    """Imports from another top-level package that go around its face (``agent_eval.PKG``,
    or ``agent_eval.run.executors``) to one of its modules, or take a name the face's
    ``__all__`` does not list. A top-level module (errors, records, ...) is its own face."""
    found = modules(root)
    bad = []
    for name, path in found.items():
        package = package_of(name, path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                named = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                named = [(resolve(node, package), alias.name) for alias in node.names]
            else:
                continue
            for module, attribute in named:
                gate = f"agent_eval.{unit(module)}"
                if (
                    module not in found
                    or module.split(".")[1:2] == name.split(".")[1:2]
                    or gate not in found
                    or found[gate].name != "__init__.py"
                    or module in PUBLIC_MODULES
                ):
                    continue
                if module != gate:
                    bad.append(f"{name}:{node.lineno} imports {module}; take it from {gate}")
                elif attribute is not None and attribute not in public_names(found[gate]):
                    bad.append(
                        f"{name}:{node.lineno} takes {attribute} from {gate}, whose __all__ "
                        "does not list it"
                    )
    return bad


def test_every_import_points_an_allowed_way() -> None:
    assert refused(SRC) == []


@pytest.mark.parametrize(
    ("where", "source", "named"),
    [
        ("score/planted.py", "from agent_eval.cli import main\n", "(score -> cli)"),
        (
            "results/planted.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from agent_eval.run.settings import RunConfig\n",
            "(results -> run)",
        ),
        (
            "report/planted.py",
            "def later():\n    import agent_eval.run.runner\n",
            "(report -> run)",
        ),
        ("tools/planted.py", "from ..agents import BUILTIN_AGENTS\n", "(tools -> agents)"),
        ("records.py", "from agent_eval import RunConfig\n", "(records -> agent_eval)"),
        (
            "run/executors/planted.py",
            "from agent_eval.run.runner import prepare\n",
            "(run.executors -> run)",
        ),
        (
            "trace/planted.py",
            "import importlib\nSENDER = importlib.import_module('agent_eval.run.runner')\n",
            "(trace -> run)",
        ),
    ],
)
def test_a_planted_upward_import_is_refused_by_name(
    tmp_path: Path, where: str, source: str, named: str
) -> None:
    tree = tmp_path / "agent_eval"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__", "suites"))
    planted = tree / where
    planted.write_text(
        (planted.read_text(encoding="utf-8") if planted.exists() else "") + source,
        encoding="utf-8",
    )
    found = refused(tree)
    assert len(found) == 1 and found[0].endswith(named), found
    module = "agent_eval." + where.removesuffix(".py").replace("/", ".")
    assert found[0].startswith(f"{module}:")


def test_other_packages_import_only_a_package_s_face() -> None:
    assert bypassed(SRC) == []


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("from agent_eval.score.copied import words\n", "imports agent_eval.score.copied; take "
         "it from agent_eval.score"),
        ("def later():\n    import agent_eval.results.summary\n", "imports "
         "agent_eval.results.summary; take it from agent_eval.results"),
        ("from agent_eval.score import _pstdev_of_nothing\n", "takes _pstdev_of_nothing from "
         "agent_eval.score, whose __all__ does not list it"),
    ],
)  # fmt: skip
def test_an_import_around_a_face_is_refused(tmp_path: Path, source: str, said: str) -> None:
    tree = tmp_path / "agent_eval"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__", "suites"))
    (tree / "report" / "planted.py").write_text(source, encoding="utf-8")
    found = bypassed(tree)
    assert len(found) == 1 and found[0].startswith("agent_eval.report.planted:"), found
    assert found[0].endswith(said)


def test_every_name_a_face_lists_is_there() -> None:
    """And stays there: a name that is also one of the package's modules, loaded lazily,
    would be replaced by the module once that is imported."""
    found = modules(SRC)
    for name, path in found.items():
        if path.name == "__init__.py" and name != "agent_eval":
            face = importlib.import_module(name)
            for public in public_names(path):
                value = getattr(face, public)
                assert value is not None, f"{name}.{public}"
                if f"{name}.{public}" in found:
                    importlib.import_module(f"{name}.{public}")
                    assert getattr(face, public) is value, f"{name}.{public} is hidden"


def test_faces_import_their_modules_only_when_a_name_is_used() -> None:
    """The faces the agents' process and the CLI's start pass through load nothing."""
    lazy = ["agents", "models", "run", "run.executors", "sandbox", "trace", "workflows"]
    code = (
        f"import sys\nfor name in {lazy!r}: __import__('agent_eval.' + name)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('agent_eval.'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == sorted(["agent_eval.lazy", *(f"agent_eval.{n}" for n in lazy)])


def test_a_downward_import_and_the_version_are_allowed(tmp_path: Path) -> None:
    tree = tmp_path / "agent_eval"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__", "suites"))
    (tree / "run" / "executors" / "planted.py").write_text(
        "from agent_eval import __version__\nfrom agent_eval.run.attempt import Outcome\n"
        "from agent_eval.records import Task\n",
        encoding="utf-8",
    )
    assert refused(tree) == []


def test_no_module_imports_itself_back() -> None:
    """No cycle among modules, through any number of others: a unit's table entries can
    name single modules of another (an executor runs run/attempt.py, and run/runner.py
    starts the executors) only because those modules never reach back."""
    found = modules(SRC)
    graph = {name: {e.target for e in imports(name, path, found) if not e.named}
             for name, path in found.items()}  # fmt: skip
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise AssertionError(" -> ".join([*path[path.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name] - {name}):
            if not (name.startswith(target + ".") and found[target].name == "__init__.py"):
                visit(target, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def test_the_table_names_what_exists() -> None:
    found = modules(SRC)
    units = {unit(name) for name in found}
    assert set(ALLOWED) == units
    for targets in ALLOWED.values():
        for target in targets:
            assert target in units or f"agent_eval.{target}" in found, target


def test_the_architecture_page_shows_the_table() -> None:
    """docs/architecture.md has one row per unit, `unit` | `what` `it` `may` `import`,
    and they are the table's rows exactly."""
    rows = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = frozenset(re.findall(r"`([^`]+)`", cells[2]))
    differ = sorted(u for u in rows.keys() | ALLOWED.keys() if rows.get(u) != ALLOWED.get(u))
    assert not differ, f"docs/architecture.md and ALLOWED differ for {differ}"


def test_the_agents_process_loads_only_what_it_needs() -> None:
    """A worker process (run.agent_host) imports neither the parent's side of the worker
    nor pydantic: every page it holds is one more for each attempt's copy to share."""
    code = (
        "import sys, agent_eval.run.executors.agent_host\n"
        "print(' '.join(sorted(m for m in sys.modules "
        "if m.startswith(('agent_eval.', 'pydantic')))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == [
        "agent_eval.agents", "agent_eval.agents.entry", "agent_eval.agents.outage",
        "agent_eval.errors", "agent_eval.lazy", "agent_eval.processes", "agent_eval.run",
        "agent_eval.run.executors",
        "agent_eval.run.executors.agent_host", "agent_eval.run.executors.copy_ahead",
        "agent_eval.sandbox", "agent_eval.sandbox.reaper",
    ]  # fmt: skip


def test_the_core_never_imports_an_extra() -> None:
    """A run on the local executor works without the ray extra: nothing imports it."""
    code = (
        "import sys, agent_eval.cli, agent_eval.run.runner, agent_eval.run.executors.local\n"
        "print(sorted(m for m in ('ray', 'llama_cpp', 'opentelemetry') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_name_a_face_lacks_is_an_attribute_error_naming_it() -> None:
    import agent_eval.run

    with pytest.raises(AttributeError, match=r"module 'agent_eval\.run' has no attribute 'nope'"):
        agent_eval.run.nope  # noqa: B018
