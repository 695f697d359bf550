"""README's test command on a fresh machine (tests/realparts.py): it stops at once with one
line when the real parts are missing and cannot be installed, and it installs them with
apt-get (update first) when it can. apt-get here is a stand-in on PATH that records its
arguments and "installs" a program into the folder ``THREADLINE_TEST_PATH`` names."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import realparts

REPO = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    """README's second command, as the README gives it."""
    blocks = re.findall(r"```sh\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    command = blocks[1].strip()
    assert command == ".venv/bin/python -m pytest"  # what docs/testing.md explains
    return command


def clean_env(**extra: str) -> dict[str, str]:
    """This run's environment less what would steer the inner pytest (xdist, addopts)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "THREADLINE_")) and k != "PYTHONPATH"
    }
    return {**env, **extra}


@pytest.mark.parametrize(
    ("missing", "euid", "sudo", "allowed", "prefix", "says"),
    [
        (["postgresql", "tmux"], 0, False, True, [], None),
        (["postgresql", "tmux"], 1000, True, True, ["sudo", "-n"], None),
        (["tmux"], 1000, False, True, None, "`sudo apt-get install -y tmux`"),
        (["postgresql"], 0, True, False, None, "THREADLINE_TEST_INSTALL=0: not installing"),
        (["tmux", "neovim"], 0, True, True, None, "&& .venv/bin/pip install -e '.[test]'"),
    ],
    ids=["root", "passwordless-sudo", "no-sudo", "opted-out", "pip-part"],
)
def test_install_decision(
    missing: list[str],
    euid: int,
    sudo: bool,
    allowed: bool,
    prefix: list[str] | None,
    says: str | None,
) -> None:
    decided = realparts.plan(
        [realparts.PARTS[n] for n in missing], euid=euid, sudo_works=lambda: sudo, allowed=allowed
    )
    assert decided.prefix == prefix
    if says is None:
        assert decided.stop is None
        assert decided.packages == [realparts.PARTS[n].debian for n in missing]
    else:
        assert decided.stop is not None and says in decided.stop and "\n" not in decided.stop


def test_readme_command_in_a_fresh_copy_stops_at_once_with_one_line(tmp_path: Path) -> None:
    """The repository as a clone has it (git ls-files), the venv README's first command
    made, and a machine where none of the real parts is found and nothing may be
    installed: README's second command stops before any test with one line."""
    copy = tmp_path / "clone"
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    (copy / ".venv").symlink_to(sys.prefix)
    nothing = tmp_path / "empty"
    nothing.mkdir()
    env = clean_env(THREADLINE_TEST_PATH=str(nothing), THREADLINE_TEST_INSTALL="0")
    done = subprocess.run(
        ["bash", "-c", readme_test_command()],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout + done.stderr
    assert done.returncode == realparts.EXIT_MISSING, out
    said = [line for line in out.splitlines() if "threadline tests: not found" in line]
    assert len(said) == 1, out
    install = "apt-get install -y postgresql tmux bubblewrap && .venv/bin/pip install -e '.[test]'"
    assert install in said[0]
    assert "Traceback" not in out and " passed" not in out and " failed" not in out, out
    assert len(out.splitlines()) < 20, out


def fake_machine(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A PATH whose apt-get records its arguments and, on install, puts a stand-in
    program for each package into the folder the suite looks in; sudo only runs its
    command, so the test means the same as root and as a user."""
    bin_dir, parts, record = tmp_path / "bin", tmp_path / "parts", tmp_path / "apt.log"
    bin_dir.mkdir()
    parts.mkdir()
    apt = f"""\
        #!/bin/sh
        echo "$*" >> {record}
        [ "$1" = install ] || exit 0
        for pkg in "$@"; do
          case "$pkg" in -*|install) continue ;; esac
          printf '#!/bin/sh\\necho "%s 9.9z"\\n' "$pkg" > {parts}/"$pkg"
          chmod +x {parts}/"$pkg"
        done
        """
    (bin_dir / "apt-get").write_text(textwrap.dedent(apt))
    (bin_dir / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
    for script in bin_dir.iterdir():
        script.chmod(0o755)
    env = clean_env(
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        THREADLINE_TEST_PATH=str(parts),
        PYTHONPATH=str(REPO),
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text('pytest_plugins = ["tests.realparts"]\n')
    uses_tmux = """\
        import os
        from pathlib import Path

        import pytest

        from tests import realparts


        @pytest.mark.realpart("tmux")
        @pytest.mark.parametrize("n", [1, 2, 3, 4])
        def test_uses_tmux(n):
            assert realparts.use("tmux").parent == Path(os.environ["THREADLINE_TEST_PATH"])


        def test_uses_nothing():
            pass
        """
    (project / "test_uses_tmux.py").write_text(textwrap.dedent(uses_tmux))
    return env, project, record


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_missing_debian_part_is_installed_once_then_named_in_the_summary(
    tmp_path: Path, workers: list[str]
) -> None:
    env, project, record = fake_machine(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *workers],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert record.read_text().splitlines() == ["update -qq", "install -y -qq tmux"], out
    assert "threadline tests: installing tmux" in out and "for tmux (terminal screen tests)" in out
    assert re.search(r"^real parts: tmux 9\.9z \(.*/parts/tmux\)$", out, re.M), out
    assert "5 passed" in out, out


def test_tests_that_need_no_real_part_install_nothing(tmp_path: Path) -> None:
    env, project, record = fake_machine(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-k", "nothing"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert not record.exists(), out
    assert "real parts: none (these tests needed none)" in out, out
