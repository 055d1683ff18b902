"""Runs the README's Python blocks marked <!-- run --> as programs, against the
test server, and checks what they did."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"<!-- run[^>]*-->\n```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_runnable_blocks() -> None:
    assert len(BLOCKS) == 2
    # "A worker in ten lines".
    assert len(BLOCKS[0].strip().splitlines()) <= 10


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(server, head, index: int) -> None:
    names = ["ada", "grace", "linus"]
    ids = [head.create_node({"type": "greet", "queue": "greetings", "props": {"name": n}})["id"] for n in names]
    env = {**os.environ, "TETHER_URL": server.url, "TETHER_TOKEN": server.token("readme-worker", "worker")}
    out = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    print(out.stdout)  # the worker's output, for the log
    assert sorted(out.stdout.split()) == sorted([*ids, *["done"] * 3])
    for node_id, name in zip(ids, names):
        node = head.get_node(node_id)
        assert node["status"] == "done"
        assert node["result"] == {"greeting": f"hello, {name}"}


def test_every_python_block_compiles() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) > len(BLOCKS)
    for block in blocks:
        compile(block, "README.md", "exec")
