"""A read-only installation run by an unprivileged user with no writable home.

The wheel (built once per run, see ``project_wheel`` in conftest.py) is installed with
``pip install --target`` into a folder that is then made read-only (``chmod -R a-w``); without
a package index the package is laid out by hand the way the wheel has it (the files
host/spark/ship.py ships).  Its dependencies come from this environment through symbolic
links.  As root the programs run as ``nobody`` (an interpreter of this Python version that
``nobody`` may execute is needed, else the test is skipped); as another user they run as
that user, who cannot write the read-only folder either.  HOME points nowhere, so Numba
finds no cache location next to the kernels nor in the home: kernels/numba_cache.py must
cache in a temporary folder.  The command line runs a small program and the demo.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from isolated_python import link_packages

REPO = Path(__file__).resolve().parents[1]
DEPENDENCIES = ("numpy", "pyarrow", "lark", "rich", "markdown_it", "mdurl", "pygments",
                "scipy", "numba", "llvmlite")
PROGRAM = """
.decl e(a:number, b:symbol)
.input e
.decl p(a:symbol, b:symbol)
.output p
p(x, y) :- e(_, x), e(_, y), x != y.
p(x, z) :- p(x, y), p(y, z).
"""


def _as_user() -> tuple[int, int] | None:
    """(uid, gid) to run as: nobody when root, else the current user."""
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    try:
        who = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return who.pw_uid, who.pw_gid


def _run(cmd: list[str], user: tuple[int, int], env: dict[str, str], cwd: Path,
         timeout: int = 600) -> subprocess.CompletedProcess[str]:
    extra = {"user": user[0], "group": user[1], "extra_groups": []} if os.geteuid() == 0 else {}
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, **extra)


def _interpreter(user: tuple[int, int], cwd: Path) -> str | None:
    """A Python of this version that ``user`` can run (the venv's own may lie in a folder
    only root can enter)."""
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    names = [getattr(sys, "_base_executable", ""), sys.executable,
             shutil.which(f"python{want}") or "", f"/usr/bin/python{want}",
             f"/usr/local/bin/python{want}"]
    for name in dict.fromkeys(n for n in names if n):
        try:
            got = _run([name, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                       user, {"PATH": "/usr/bin:/bin"}, cwd, timeout=60)
        except OSError:
            continue
        if got.returncode == 0 and got.stdout.strip() == want:
            return name
    return None


def _install(site: Path, wheel: Path | None) -> str:
    """The package into ``site`` (from the wheel, else laid out by hand); how it was done."""
    if wheel is not None:
        got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--no-index", "--target", str(site), str(wheel)],
                             capture_output=True, text=True, timeout=600)
        assert got.returncode == 0, got.stderr[-3000:]
        return "wheel"
    from gpu_engine.host.spark.ship import package_folders, zip_members

    for name, path in zip_members(package_folders()):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, site / name)
    shutil.copytree(REPO / "examples" / "lubm", site / "gpu_engine" / "examples" / "lubm")
    return "layout"


def _make_read_only(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            p = Path(folder, name)
            p.chmod(stat.S_IMODE(p.stat().st_mode) & ~0o222)
        Path(folder).chmod(0o555)


def _make_writable(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        Path(folder).chmod(0o755)
        for name in files:
            Path(folder, name).chmod(0o644)


@pytest.fixture()
def read_only_install(project_wheel: tuple[Path | None, str]) -> Iterator[dict[str, object]]:
    """A read-only install (``site``), its dependencies (``deps``), a read-only working
    folder with a program and facts (``work``), the user and the interpreter to run."""
    user = _as_user()
    if user is None:
        pytest.skip("running as root and there is no user 'nobody'")
    # not under pytest's basetemp: that folder is private to its owner
    root = Path(tempfile.mkdtemp(prefix="gpu-engine-readonly-"))
    root.chmod(0o755)
    try:
        python = _interpreter(user, root)
        if python is None:
            pytest.skip("no interpreter of this Python version that an unprivileged user can run")
        site, work = root / "site", root / "work"
        site.mkdir()
        work.mkdir()
        how = _install(site, project_wheel[0])
        deps = link_packages(root / "deps", DEPENDENCIES)
        (work / "tc.dl").write_text(PROGRAM)
        (work / "e.facts").write_text("".join(f"{i}\tn{i % 7}\n" for i in range(20)))
        _make_read_only(site)
        _make_read_only(work)
        yield {"site": site, "deps": deps, "work": work, "user": user, "python": python,
               "how": how, "root": root}
    finally:
        _make_writable(root)
        shutil.rmtree(root, ignore_errors=True)


def _env(inst: dict[str, object], tmpdir: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "TMPDIR": tmpdir,
            "PYTHONPATH": f"{inst['site']}:{inst['deps']}", "GPU_ENGINE_DISABLE_GPU": "1",
            "LC_ALL": "C.UTF-8"}


def test_read_only_install_runs_the_cli_without_a_writable_home(
        read_only_install: dict[str, object]) -> None:
    inst = read_only_install
    python, user, work = str(inst["python"]), inst["user"], Path(str(inst["work"]))
    script = Path(str(inst["site"])) / "bin" / "gpu-engine"
    entry = [python, "-s", str(script)] if script.is_file() else [
        python, "-s", "-m", "gpu_engine.host.cli"]
    expected = {f"n{i}\tn{j}" for i in range(7) for j in range(7)}  # p: every pair, i = j too
    env = _env(inst, "/tmp")
    where = _run([python, "-s", "-c", "import gpu_engine, gpu_engine.kernels.numba_cache as c; "
                  "print(gpu_engine.__file__); print(c.CACHE); import numba.core.config as f; "
                  "print(f.CACHE_DIR)"], user, env, work)
    assert where.returncode == 0, where.stderr[-3000:]
    at, cached, cache_dir = (where.stdout.splitlines() + ["", "", ""])[:3]
    assert Path(at).is_relative_to(Path(str(inst["site"])))
    # nothing writable beside the kernels nor in the home: a temporary folder caches them
    assert cached == "True" and cache_dir.startswith("/tmp/gpu-engine-numba-"), where.stdout
    got = _run([*entry, "run", "tc.dl", "-F", ".", "-D", "-"], user, env, work)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-3000:]
    rows = {line for line in got.stdout.splitlines() if line.startswith("n")}
    assert rows == expected, got.stdout[-2000:]
    demo = _run([python, "-s", "-m", "gpu_engine.host.demo", "--device", "cpu"], user, env, work)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-3000:]
    assert "matches the reference" in demo.stdout
