"""``holodeck serve`` over a folder with names that are not text (a Latin-1 file and folder,
a terminal escape sequence in a name): it serves, and an MCP host gets the escaped names,
in the structured results and in the text, the same as ``holodeck search --json``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cli_helpers import run_holodeck
from odd_names import ESC, ODD_FILES, SHOWN, write_odd_docs
from serve_helpers import make_project, sources, stdio_session


async def watching(errlog: Path, timeout: float = 240) -> None:
    """Wait for the first pass to end: the server then says it watches the folders."""
    deadline = asyncio.get_running_loop().time() + timeout
    while "Watching" not in errlog.read_text():
        assert asyncio.get_running_loop().time() < deadline, errlog.read_text()
        await asyncio.sleep(0.2)


def test_mcp_results_name_odd_files_escaped(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")
    write_odd_docs(project / "docs")
    asyncio.run(_scenario(project))


async def _scenario(project: Path) -> None:
    errlog_path = project / "stdio.err"
    latin = b"caf\xe9.md"
    with errlog_path.open("w") as errlog:
        async with stdio_session(project, errlog) as client:
            await watching(errlog_path)
            query = ODD_FILES[latin][0]
            result = await client.call_tool("station_docs", {"query": query})
            assert not result.is_error, result.content[0].text
            assert sources(result.structured_content)[0] == f"docs/{SHOWN[latin]}"
            assert f"| Source: docs/{SHOWN[latin]} |" in result.content[0].text

            escaped = b"\x1b[31mred\x1b[0m.md"
            result = await client.call_tool("station_docs", {"query": ODD_FILES[escaped][0]})
            assert sources(result.structured_content)[0] == f"docs/{SHOWN[escaped]}"
            assert ESC not in result.content[0].text
            assert ESC not in json.dumps(result.structured_content, ensure_ascii=False)
    logs = errlog_path.read_text()
    assert "Traceback" not in logs and ESC not in logs, logs

    searched = run_holodeck("search", query, "--json", "--tool", "station_docs", cwd=project)
    assert sources(json.loads(searched.stdout))[0] == f"docs/{SHOWN[latin]}"
