"""Finding the program in a response: the last closed block in a known language."""

from __future__ import annotations

import pytest

from reward_service.scorers.code.fences import Extracted, last_program

CASES = [
    ("```python\nprint(1)\n```", "print(1)\n"),
    ("```py\nprint(1)\n```", "print(1)\n"),
    ("```Python3\nprint(1)\n```", "print(1)\n"),
    ("```\nprint(1)\n```", "print(1)\n"),
    ("text\n```python\na\n```\nmore\n```python\nb\n```\nbye", "b\n"),
    ("```python\na\n```\nSample output:\n```text\n3\n```", "a\n"),
    ("```python\na\n```\n```python\nunclosed", "a\n"),
    ("```python\nearly\n```\n</think>\n```python\nlate\n```", "late\n"),
    ("  ```python\n  indented\n  ```", "  indented\n"),
    ("````python\n```\ninner\n```\n````", "```\ninner\n```\n"),
    ("```python title=x\nprint(2)\n```  ", "print(2)\n"),
    ("```python\r\nprint(3)\r\n```\r\n", "print(3)\r\n"),
]


@pytest.mark.parametrize(("response", "source"), CASES)
def test_last_program_is_the_last_closed_python_block(response: str, source: str) -> None:
    """The program is the body of the last closed ```python/```py/untagged block."""
    assert last_program(response) == Extracted("python", source)


@pytest.mark.parametrize(
    ("word", "language"),
    [
        ("cpp", "cpp"),
        ("C++", "cpp"),
        ("cxx", "cpp"),
        ("java", "java"),
        ("go", "go"),
        ("golang", "go"),
        ("js", "javascript"),
        ("javascript", "javascript"),
        ("node", "javascript"),
        ("rust", "rust"),
        ("rs", "rust"),
    ],
)
def test_the_fence_word_names_a_compiled_language(word: str, language: str) -> None:
    """`cpp`, `c++`, `java`, `go`, `js`, `rust` and their like pick the compiled runners."""
    response = f"```python\nprint(1)\n```\n```{word}\nint main() {{}}\n```\n```text\n1\n```"
    assert last_program(response) == Extracted(language, "int main() {}\n")


@pytest.mark.parametrize(
    "response",
    [
        "print(1)",
        "```python\nprint(1)",
        "```bash\nls\n```",
        "inline ```print(1)``` only",
    ],
)
def test_no_program_without_a_closed_block_in_a_known_language(response: str) -> None:
    """No closed block in a known language: no program."""
    assert last_program(response) is None
