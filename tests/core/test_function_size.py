"""The function-size habit (issue 19): no function in the library is over 60 lines, docstring
excluded, unless a comment right above its ``def`` (``# long: <why the math needs it>``) says why."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def _long_functions(source: str) -> list[tuple[int, str, int]]:
    """``(line, name, length)`` of every function over LIMIT lines without a ``# long:`` comment above it."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            length -= first.end_lineno - first.lineno + 1
        top = min([node.lineno] + [d.lineno for d in node.decorator_list])
        if length > LIMIT and not (top > 1 and lines[top - 2].strip().startswith("# long:")):
            found.append((node.lineno, node.name, length))
    return found


def test_the_checker_finds_a_long_function_and_accepts_one_that_says_why():
    body = "".join(f"    x{i} = {i}\n" for i in range(LIMIT - 1))  # with its def line, LIMIT lines
    assert _long_functions(f"def f():\n{body}") == []
    assert _long_functions(f'def f():\n    """Doc\n    string."""\n{body}') == []  # the docstring does not count
    long = f"@decorated\ndef f():\n{body}    return x0\n"
    assert _long_functions(long) == [(2, "f", LIMIT + 1)]
    assert _long_functions("# long: one recursion of the paper's eq. 7\n" + long) == []


def test_no_library_function_is_over_60_lines_without_saying_why():
    over = [f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)"
            for folder in ("svibench", "algorithms", "models", "datasets", "peers")
            for path in sorted((ROOT / folder).rglob("*.py"))
            for line, name, length in _long_functions(path.read_text())]
    assert over == [], "split these, or say why above the def with `# long: ...`:\n" + "\n".join(over)
