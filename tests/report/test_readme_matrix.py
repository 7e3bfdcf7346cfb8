"""The README's compatibility matrix is the one `svibench list` prints (so the map cannot drift)."""
from __future__ import annotations

import re
from pathlib import Path

from svibench.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_matrix_is_what_svibench_list_prints(capsys):
    main(["list"])
    printed = capsys.readouterr().out
    start = printed.index("Compatibility (algorithm × model")
    matrix = printed[printed.index("\n", start) + 1:printed.index("Skipped pairs:")].rstrip("\n")
    block = re.search(r"## Compatibility.*?```text\n(.*?)\n```", README.read_text(), re.S)
    assert block is not None, "README has no ## Compatibility section with a text block"
    assert block.group(1) == matrix, "regenerate the README's matrix from `svibench list`"
