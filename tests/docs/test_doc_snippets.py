"""How ``doc_snippets`` reads a page: blocks, languages and directives (no block is run here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_snippets import SnippetError, page_snippets, pages


def _page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


PAGE = """# A page

<!-- snippet: skip — needs a GPU -->
```python
import torch
model = torch.nn.Linear(2, 2).cuda()
```

Output:

```text
tensor([...])
```

<!-- snippet: continues -->
```python
print(model)
```

<!-- snippet: expect hello -->
<!-- snippet: timeout 5 -->

```bash
echo hello
```

A paragraph keeps the directive above it to itself.
<!-- snippet: slow -->

Words.

```console
$ osworld-gym --version
osworld-gym 0.1.0
```
"""


def test_blocks_their_lines_languages_and_directives(tmp_path: Path) -> None:
    gpu, output, follow, echo, console = page_snippets(_page(tmp_path, PAGE))
    assert [s.line for s in (gpu, output, follow, echo, console)] == [4, 11, 16, 23, 32]
    kinds = [s.kind for s in (gpu, output, echo, console)]
    assert kinds == ["python", "output", "shell", "shell"]
    assert gpu.skip == "needs a GPU" and gpu.skip_reason() == "needs a GPU"
    assert follow.continues and follow.previous is gpu and follow.skip is None
    assert follow.skip_reason() == f"continues {gpu.name}: needs a GPU"
    assert follow.program().index("torch.nn.Linear") < follow.program().index("print(model)")
    assert (echo.expect, echo.timeout, echo.slow) == (("hello",), 5.0, False)
    assert not console.slow and console.program() == "osworld-gym --version\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("```\nls\n```\n", "a block without a language"),
        ("```rust\nfn main() {}\n```\n", "unknown block language 'rust'"),
        ("<!-- snippet: skip -->\n```bash\nls\n```\n", "unknown directive"),
        ("<!-- snippet: continues -->\n```python\nx\n```\n", "no Python block comes before"),
        ("<!-- snippet: continues -->\n```bash\nls\n```\n", "only Python blocks continue"),
        ("<!-- snippet: serves 127.0.0.1:80 -->\n```python\nx\n```\n", "only shell blocks serve"),
        ("<!-- snippet: slow -->\n```text\nout\n```\n", "it takes none"),
        ("```python\nx = 1\n", "never closed"),
    ],
)
def test_what_the_test_cannot_run_as_written_is_an_error(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(SnippetError, match=message):
        page_snippets(_page(tmp_path, text))


def test_the_pages_include_the_readmes_and_the_docs() -> None:
    names = {path.name for path in pages()} | {path.parent.name for path in pages()}
    assert {"README.md", "CONTRIBUTING.md", "quickstart.md", "howto", "openenv"} <= names
