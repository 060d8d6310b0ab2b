"""Code task: upgrade a pinned dependency and adapt the code to its new API.

Standard-library Python tested with ``unittest``, like every code task.
"""

from __future__ import annotations

import re
from pathlib import Path

from waygraph.eval.suite import EvalTask, TaskVerdict, register, sh, write
from waygraph.eval.workspace import (
    GITIGNORE,
    init_repo,
    run_python,
    unchanged_files,
)

# ------------------------------------------------------------------ upgrade-pinned-dependency

TINYFMT_1 = '''\
"""tinyfmt 1.0.0"""

__version__ = "1.0.0"


def fmt(template, **values):
    return template.format(**values)
'''
TINYFMT_2 = '''\
"""tinyfmt 2.0.0"""

__version__ = "2.0.0"


def render(template, values):
    """Fill ``template`` from the mapping ``values``."""
    return template.format_map(values)
'''
TINYFMT_CHANGES = """\
# tinyfmt changes

## 2.0.0
- `fmt(template, **values)` is removed: use `render(template, values)` with a dict.
"""
APP_OLD = '''\
"""The app: greetings."""

import tinyfmt


def greeting(name: str) -> str:
    return tinyfmt.fmt("Hello, {name}!", name=name)
'''
APP_NEW = '''\
"""The app: greetings."""

import tinyfmt


def greeting(name: str) -> str:
    return tinyfmt.render("Hello, {name}!", {"name": name})
'''
CHECK_PY = '''\
"""Checks the app against the pinned tinyfmt from vendor/ (offline)."""

import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent
pins = dict(re.findall(r"^([a-z0-9_-]+)==(\\S+)$", (root / "requirements.txt").read_text(), re.M))
version = pins.get("tinyfmt")
package = root / "vendor" / f"tinyfmt-{version}"
if not package.is_dir():
    print(f"check FAILED: tinyfmt=={version} is not in vendor/")
    sys.exit(1)
sys.path.insert(0, str(package))
sys.path.insert(0, str(root))
import tinyfmt  # noqa: E402

try:
    import app  # noqa: E402

    result = app.greeting("Ada")
except Exception as exc:
    print(f"check FAILED: {type(exc).__name__}: {exc}")
    sys.exit(1)
if tinyfmt.__version__ != version or result != "Hello, Ada!":
    print(f"check FAILED: tinyfmt {tinyfmt.__version__}, greeting {result!r}")
    sys.exit(1)
print(f"check passed: tinyfmt {version}, greeting ok")
'''
PIP_PY = '''\
"""An offline stand-in for pip: packages are the folders vendor/<name>-<version>."""

import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent


def pins():
    text = (root / "requirements.txt").read_text()
    return dict(re.findall(r"^([a-z0-9_-]+)==(\\S+)$", text, re.M))


def versions(name):
    found = [p.name.split("-", 1)[1] for p in (root / "vendor").glob(f"{name}-*")]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")))


def main(args):
    if args[:2] == ["list", "--outdated"]:
        rows = [(n, v, versions(n)[-1]) for n, v in pins().items() if versions(n)[-1] != v]
        if not rows:
            return 0
        print(f"{'Package':<10} {'Version':<8} Latest")
        print(f"{'-' * 10} {'-' * 8} {'-' * 6}")
        for name, current, latest in rows:
            print(f"{name:<10} {current:<8} {latest}")
        return 0
    if args[:1] == ["freeze"]:
        for name, version in pins().items():
            print(f"{name}=={version}")
        return 0
    if args[:2] == ["install", "-r"]:
        for name, version in pins().items():
            if version not in versions(name):
                print(f"ERROR: No matching distribution found for {name}=={version}")
                return 1
        print("Successfully installed " + " ".join(f"{n}-{v}" for n, v in pins().items()))
        return 0
    if args[:1] == ["check"]:
        print("No broken requirements found.")
        return 0
    print("usage: pip.py list --outdated | freeze | install -r requirements.txt | check")
    return 2


sys.exit(main(sys.argv[1:]))
'''


def _setup_dependency(root: Path) -> Path:
    init_repo(
        root,
        {
            ".gitignore": GITIGNORE,
            "requirements.txt": "tinyfmt==1.0.0\n",
            "app.py": APP_OLD,
            "check.py": CHECK_PY,
            "tools/pip.py": PIP_PY,
            "vendor/tinyfmt-1.0.0/tinyfmt.py": TINYFMT_1,
            "vendor/tinyfmt-2.0.0/tinyfmt.py": TINYFMT_2,
            "vendor/tinyfmt-2.0.0/CHANGES.md": TINYFMT_CHANGES,
        },
    )
    return root


def _check_dependency(ws: Path) -> TaskVerdict:
    problems = [
        *unchanged_files(
            ws,
            {
                "check.py": CHECK_PY,
                "vendor/tinyfmt-1.0.0/tinyfmt.py": TINYFMT_1,
                "vendor/tinyfmt-2.0.0/tinyfmt.py": TINYFMT_2,
            },
        )
    ]
    pins = ws / "requirements.txt"
    requirements = pins.read_text() if pins.is_file() else ""
    if not re.search(r"^tinyfmt==2\.0\.0$", requirements, re.M):
        problems.append("requirements.txt does not pin tinyfmt==2.0.0")
    ok, output = run_python(ws, "check.py")
    if not ok:
        problems.append(f"check.py fails: {output.strip()[-200:]}")
    return TaskVerdict.of(problems)


register(
    EvalTask(
        id="upgrade-pinned-dependency",
        plan="dependency_update",
        request=(
            "Please update dependencies: upgrade tinyfmt to 2.0.0 in requirements.txt and keep "
            "`python3 check.py` passing. We are offline: packages are the folders in vendor/, "
            "and tools/pip.py stands in for pip (python3 tools/pip.py list --outdated, "
            "freeze, install -r requirements.txt, check)."
        ),
        setup=_setup_dependency,
        check=_check_dependency,
        solution=(
            sh(
                "python3 tools/pip.py list --outdated && cat vendor/tinyfmt-2.0.0/CHANGES.md "
                "&& grep -n fmt app.py",
                "audit",
            ),
            sh(
                "cp requirements.txt requirements.txt.bak && python3 tools/pip.py freeze > "
                "pip-freeze.before.txt && sha256sum requirements.txt.bak pip-freeze.before.txt",
                "backup_lockfile",
            ),
            write("app.py", APP_NEW, "perform_update"),
            sh(
                "sed -i 's/^tinyfmt==1.0.0$/tinyfmt==2.0.0/' requirements.txt && "
                "python3 tools/pip.py install -r requirements.txt",
                "perform_update",
            ),
            sh("python3 tools/pip.py check", "check_consistency"),
            sh("python3 check.py", "run_tests"),
            sh(
                "rm requirements.txt.bak pip-freeze.before.txt && git add requirements.txt "
                "app.py && git commit -q -m 'deps: upgrade tinyfmt to 2.0.0' && "
                "git show --stat --format=%s HEAD",
                "commit",
            ),
        ),
        wrong_solution=(sh("sed -i 's/1.0.0/2.0.0/' requirements.txt && echo upgraded"),),
        wrong_because="bumps the pin without adapting the code to the new API or running the check",
        max_steps=14,
        tags=("python", "dependencies"),
    )
)
