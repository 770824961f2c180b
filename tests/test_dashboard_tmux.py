"""The dashboard in a real terminal: a training script runs under tmux with dashboard="tui"; the test
waits for the dashboard to draw, presses q and chooses "stop training cleanly" (the real Learner: fit
returns, a checkpoint is written, the code after fit runs, exit status 0) or "kill" (a fake learner:
exit status 130 at once); both leave the terminal restored. Skipped where tmux is missing.

The tmux server runs on its own socket (tmux -L), so the test never touches a user's sessions.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("textual")
TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = pathlib.Path(__file__).resolve().parent

FAKE_SCRIPT = """
import sys
from test_dashboard import FakeLearner
from ember.train.dashboard import make_reporter

learner = FakeLearner([make_reporter("tui")], epochs=1000, batches=50, delay=0.01)
result = learner.fit()
print("AFTER-FIT", result, learner.stop_calls)
with open(sys.argv[1], "w") as f:
    f.write(f"{result} {learner.stop_calls} {learner.checkpoints}")
"""

REAL_SCRIPT = """
import os
import sys

import ember
from ember import nn
from ember.train import Learner

ember.manual_seed(0)
x = ember.randn(256, 8)
y = (x[:, 0] > 0).long()
batches = [(x[i:i + 16], y[i:i + 16]) for i in range(0, 256, 16)]
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
learner = Learner(model, ember.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), batches,
                  batches[:4], epochs=100000, dashboard="tui", checkpoint_dir="ck", checkpoint_every_epochs=1000)
model, history = learner.fit()
print("AFTER-FIT", learner.state.stop_reason, learner.state.step)
with open(sys.argv[1], "w") as f:
    f.write(f"{learner.state.stop_reason} {learner.state.step} {sorted(os.listdir('ck'))}")
"""


class Session:
    """A script running in one detached tmux session (on a private server socket), driven step by step:
    wait for the dashboard, press q, wait for the dialog, press ``choice``, wait for the exit status."""

    def __init__(self, socket: str, name: str, directory: pathlib.Path, script: str, choice: str) -> None:
        self.socket, self.name, self.dir, self.choice = socket, name, directory, choice
        directory.mkdir()
        path = directory / "train_script.py"
        path.write_text(script)
        self.marker, self.rc, self.stty = directory / "after_fit.txt", directory / "rc.txt", directory / "stty.txt"
        q = shlex.quote
        env = f"PYTHONPATH={q(f'{ROOT}{os.pathsep}{TESTS}')} TERM=xterm-256color"
        command = (f"cd {q(str(directory))} && env {env} {q(sys.executable)} {q(str(path))} {q(str(self.marker))}; "
                   f"s=$?; stty -a > {q(str(self.stty))}; echo $s > {q(str(self.rc))}; sleep 60")
        self.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", command)
        self.stage = "dashboard"

    def tmux(self, *args: str) -> str:
        out = subprocess.run([TMUX, "-L", self.socket, "-f", os.devnull, *args], capture_output=True, text=True,
                             timeout=20)
        return out.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def advance(self) -> None:
        """Take the next step if the screen (or the exit status file) says it is time."""
        if self.stage == "dashboard":
            text = self.screen()
            if "full history" in text and "step" in text and "quit" in text:
                self.tmux("send-keys", "-t", self.name, "q")
                self.stage = "dialog"
        elif self.stage == "dialog":
            if "Quit training?" in self.screen():
                self.tmux("send-keys", "-t", self.name, self.choice)
                self.stage = "exit"
        elif self.stage == "exit" and self.rc.exists() and self.rc.read_text().strip():
            self.stage = "done"

    def result(self) -> tuple[str, str, str, str]:
        """(what the script wrote after fit, its exit status, the screen, ``stty -a`` after it ended)."""
        after = self.marker.read_text() if self.marker.exists() else ""
        return after, self.rc.read_text().strip(), self.screen(), self.stty.read_text()


def run_in_tmux(tmp_path: pathlib.Path, jobs: list[tuple[str, str]], timeout: float = 60.0) -> list[tuple]:
    """Run each (script, choice) in its own tmux session at the same time; return each ``Session.result``."""
    socket = f"ember-dash-test-{os.getpid()}"
    sessions = []
    try:
        for i, (script, choice) in enumerate(jobs):
            sessions.append(Session(socket, f"job{i}", tmp_path / f"job{i}", script, choice))
        deadline = time.monotonic() + timeout
        while any(s.stage != "done" for s in sessions) and time.monotonic() < deadline:
            for s in sessions:
                s.advance()
            time.sleep(0.05)
        for s in sessions:
            assert s.stage == "done", f"{s.name} stuck waiting for the {s.stage}; the screen shows:\n{s.screen()}"
        return [s.result() for s in sessions]
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True, timeout=20)


def terminal_restored(stty: str) -> bool:
    """Canonical mode and echo are back on (Textual had turned them off)."""
    flags = stty.split()
    return "icanon" in flags and "echo" in flags


def test_tmux_stop_cleanly_and_kill(tmp_path):
    # Two sessions at once (it halves the wall time): the real Learner stopped cleanly, a fake one killed.
    stopped, killed = run_in_tmux(tmp_path, [(REAL_SCRIPT, "s"), (FAKE_SCRIPT, "k")])

    after, status, screen, stty = stopped
    assert status == "0", screen
    reason, step, files = after.split(" ", 2)
    assert reason == "user"                                                # fit returned after a clean stop
    assert str(int(step)) in files and ".safetensors" in files             # a checkpoint at that step
    assert f"AFTER-FIT user {step}" in screen                              # the code after fit ran
    assert "training stopped (user)" in screen and "last checkpoint:" in screen
    assert terminal_restored(stty), stty

    after, status, screen, stty = killed
    assert status == "130", screen
    assert after == "" and "AFTER-FIT" not in screen                     # nothing after fit ran
    assert "training killed from the dashboard (exit status 130)" in screen
    assert terminal_restored(stty), stty
