"""``holodeck ingest --watch``: the first ingest, then one pass per batch of saved changes.

The real command in a subprocess, real files, the real model; another ``holodeck search``
process sees what each pass stored.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from odd_names import ODD_FILES, write_named

AGENT = """
name: watch-test
tools:
  - type: vectorstore
    name: kb
    source: docs
"""


class Watcher:
    """``holodeck ingest --watch`` running in ``project``; stderr collected in a file."""

    def __init__(self, project: Path, *args: str) -> None:
        self.err = project / "watch.err"
        self.out = project / "watch.out"
        env = {"HOME": str(project / "home"), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
        if "PYTHONPATH" in os.environ:  # the checkout under test, not an installed holodeck
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", *args, "ingest", "--watch"],
            cwd=project,
            env=env,
            stdout=self.out.open("w"),
            stderr=self.err.open("w"),
        )

    def stderr(self) -> str:
        return self.err.read_text()

    def wait_for(self, text: str, count: int = 1, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while self.stderr().count(text) < count:
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.stderr()}"
            assert time.monotonic() < deadline, f"no {text!r} within {timeout} s:\n{self.stderr()}"
            time.sleep(0.2)

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(240)  # a loaded machine is slow, not stuck

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "pumps.md", "The bilge pump starts when water reaches ten centimetres.\n")
    write(root / "docs" / "ignored.png", "not a document")
    return root


def search_sources(project: Path, query: str) -> list[str]:
    result = run_holodeck("search", query, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return [r["source_path"] for r in json.loads(result.stdout)["tools"][0]["results"]]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_watch_ingests_each_change_until_stopped(project: Path, stop_signal: int) -> None:
    watcher = Watcher(project)
    try:
        watcher.wait_for("Watching docs for changes")
        assert "kb: 1 new" in watcher.stderr()

        write(
            project / "docs" / "sails.md", "The mainsail is reefed when the wind passes 25 knots.\n"
        )
        watcher.wait_for("kb: 1 new, 0 changed")  # a pass: time-stamped summary line
        assert search_sources(project, "When is the mainsail reefed?")[0] == "docs/sails.md"

        write(project / "docs" / "sails.md", "The jib is furled when the wind passes 30 knots.\n")
        watcher.wait_for("0 new, 1 changed")
        (project / "docs" / "pumps.md").unlink()
        watcher.wait_for("1 removed")
        assert search_sources(project, "bilge pump water level") == ["docs/sails.md"]

        # Hidden files (the index itself lives in .holodeck/) never start a pass.
        passes = watcher.stderr().count("kb: ")
        write(project / "docs" / ".draft.md", "a hidden draft\n")
        time.sleep(3)
        assert watcher.stderr().count("kb: ") == passes

        assert watcher.stop(stop_signal) == 0
    finally:
        watcher.kill()
    logs = watcher.stderr()
    assert logs.endswith("Stopped watching.\n") and "Traceback" not in logs
    assert logs.count("Skipped ignored.png") == 1  # warned once, not on every pass


def test_a_failing_first_pass_stops_with_its_error(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    result = run_holodeck("ingest", "--watch", cwd=tmp_path)
    assert result.returncode == 2 and "docs does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_failing_later_pass_is_reported_and_watching_goes_on(project: Path) -> None:
    watcher = Watcher(project)
    try:
        watcher.wait_for("Watching docs for changes")
        (project / "docs" / "pumps.md").unlink()  # nothing left to ingest: the contract's error
        watcher.wait_for("Error: kb: ")
        assert "no supported files to ingest" in watcher.stderr()
        write(project / "docs" / "anchor.md", "Drop the anchor in sand, never on coral.\n")
        watcher.wait_for("1 removed")  # the next change retries: the pump goes, the anchor in
        assert search_sources(project, "Where should the anchor be dropped?") == ["docs/anchor.md"]
        assert watcher.stop(signal.SIGTERM) == 0
    finally:
        watcher.kill()


def test_watch_refuses_json(project: Path) -> None:
    result = run_holodeck("ingest", "--watch", "--json", cwd=project)
    assert result.returncode == 2 and "--json" in result.stderr


def test_watch_goes_on_past_names_the_watcher_cannot_read(tmp_path: Path) -> None:
    """The file watcher cannot report a name that is not UTF-8: ``ingest --watch`` keeps
    ingesting every change anyway, that file's and the others'."""
    write(tmp_path / "agent.yaml", AGENT)
    docs = tmp_path / "docs"
    write_named(docs, b"r\xe9sum\xe9/rockets.md", ODD_FILES[b"r\xe9sum\xe9/rockets.md"][1])
    write(docs / "pumps.md", "The bilge pump starts when water reaches ten centimetres.\n")
    watcher = Watcher(tmp_path)
    try:
        watcher.wait_for("Watching docs for changes")
        assert "kb: 2 new" in watcher.stderr()

        write_named(docs, b"caf\xe9.md", ODD_FILES[b"caf\xe9.md"][1])
        watcher.wait_for("kb: 1 new, 0 changed")
        assert search_sources(tmp_path, "espresso machine pressure")[0] == "docs/caf\\xe9.md"

        write(docs / "sails.md", "The mainsail is reefed when the wind passes 25 knots.\n")
        watcher.wait_for("kb: 1 new, 0 changed", count=2)
        assert search_sources(tmp_path, "When is the mainsail reefed?")[0] == "docs/sails.md"

        os.unlink(os.path.join(os.fsencode(docs), b"caf\xe9.md"))
        watcher.wait_for("1 removed")
        assert watcher.stop(signal.SIGINT) == 0
    finally:
        watcher.kill()
    logs = watcher.stderr()
    assert logs.endswith("Stopped watching.\n") and "Traceback" not in logs, logs


def test_an_edit_of_agent_yaml_is_applied_or_said_to_need_a_restart(project: Path) -> None:
    write(project / "docs" / "sails.md", "The mainsail is reefed when the wind passes 25 knots.\n")
    watcher = Watcher(project)
    reefed = "When is the mainsail reefed?"
    try:
        watcher.wait_for("Watching docs for changes")
        assert "docs/sails.md" in search_sources(project, reefed)

        # An exclude: added while watching takes the file out on the pass it starts.
        write(project / "agent.yaml", AGENT + "    exclude: [sails.md]\n")
        watcher.wait_for("agent.yaml changed: kb: exclude applied")
        watcher.wait_for("1 removed")
        assert search_sources(project, reefed) == ["docs/pumps.md"]

        # A bad edit: its config error line, and the running settings stay.
        write(project / "agent.yaml", AGENT + "    exclude: 5\n")
        watcher.wait_for("the running settings stay")
        assert "agent.yaml:6: tools[0].exclude:" in watcher.stderr()
        write(project / "docs" / "knots.md", "A bowline is tied before the race starts.\n")
        watcher.wait_for("kb: 1 new, 0 changed, 0 touched, 1 unchanged, 0 removed")  # no sails

        # Taking the pattern out brings the file back in.
        write(project / "agent.yaml", AGENT)
        watcher.wait_for("agent.yaml changed: kb: exclude applied", count=2)
        watcher.wait_for("kb: 1 new, 0 changed, 0 touched, 2 unchanged")
        assert search_sources(project, reefed)[0] == "docs/sails.md"

        # What decides how the chunks were made needs a restart: said at once, not applied.
        write(project / "agent.yaml", AGENT + "    chunk_size: 64\n")
        watcher.wait_for("kb: chunk_size cannot change while running")
        assert "holodeck ingest --force-ingest" in watcher.stderr().splitlines()[-1]
        assert watcher.stop(signal.SIGTERM) == 0
    finally:
        watcher.kill()
    assert "Traceback" not in watcher.stderr()


def test_an_edited_model_the_restart_could_not_use_gives_its_error_not_advice(
    project: Path,
) -> None:
    """The watch said to restart with --force-ingest, which then refused the model (rc 2,
    "needs a provider"): it checks the edit as the restart would and shows that line instead
    (issue 61, item 4)."""
    edited = AGENT + "    embedding_model: some-other/model\n"
    watcher = Watcher(project)
    try:
        watcher.wait_for("Watching docs for changes")
        write(project / "agent.yaml", edited)
        watcher.wait_for("the running settings stay")
        write(project / "docs" / "knots.md", "A bowline is tied before the race starts.\n")
        watcher.wait_for("kb: 1 new, 0 changed")  # still watching, with the running model
        assert watcher.stop(signal.SIGTERM) == 0
    finally:
        watcher.kill()
    restart = run_holodeck("ingest", "--force-ingest", cwd=project)
    assert restart.returncode == 2
    [refused] = restart.stderr.strip().splitlines()
    assert "needs a provider" in refused
    said = [line for line in watcher.stderr().splitlines() if "running settings stay" in line]
    assert len(said) == 1 and refused.removeprefix("Error: ") in said[0], said
    assert "cannot change while running" not in watcher.stderr()
    assert "Traceback" not in watcher.stderr()
