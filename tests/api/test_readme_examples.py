"""The README's HTTP examples run as written against a real server (issue 40: the README's curl
once failed with HTTP 422 for want of a Content-Type). The curl lines run in bash with only the
host and port changed and $KEY set; the `openai` client snippet runs with the server's address
and a real key in place of "gwk_...". The API's own behaviour is tested in test_server.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.test_readme_examples import readme_block


def _address(base: str) -> str:
    return base.removeprefix("http://")


def test_the_readmes_curl_examples_work_in_order_on_an_empty_server(tmp_path):
    """Issue 50: the examples once asked a knowledge base named "handbook" that nothing had made
    ("no knowledge base named 'handbook'"). Now, on a server with no knowledge base, the README's
    lines run in the order printed: create it, upload a real PDF, wait for the job, ask."""
    if shutil.which("curl") is None:  # .ci/run installs it, as it installs chromium for the browser tests
        pytest.skip("curl is not installed (apt-get install curl): the README's curl examples need it")
    from tests.api.conftest import api_server, make_keys
    from tests.helpers import make_pdf

    data = tmp_path / "data"
    keys = make_keys(data)
    (tmp_path / "handbook.pdf").write_bytes(make_pdf(["Parental leave lasts sixteen weeks at full pay.",
                                                      "The office opens at 8 o'clock on weekdays."]))
    block = readme_block("## HTTP API", "curl -s localhost:8000/v1/query")
    script = block[block.index("KEY=gwk_..."):]
    queries = re.findall(r"^(curl .*v1/query.*?\\\n.*?)(?:\s+#.*)?$", script, re.M)
    assert len(queries) == 2, script  # the JSON answer and the streamed one
    setup = script[:script.index(queries[0])].replace("KEY=gwk_...", "")
    with api_server(data) as base:
        env = {**os.environ, "KEY": keys["alice"]}

        def bash(cmd: str):
            return subprocess.run(["bash", "-ec", cmd.replace("localhost:8000", _address(base))], env=env,
                                  capture_output=True, text=True, timeout=300, cwd=tmp_path)

        (tmp_path / "setup.sh").write_text(setup.replace("localhost:8000", _address(base)))
        made = bash("timeout 240 bash -e setup.sh")
        assert made.returncode == 0, (made.stdout, made.stderr)
        assert '"name":"handbook"' in made.stdout.replace(" ", ""), made.stdout
        plain, streamed = bash(queries[0]), bash(queries[1])
    assert plain.returncode == 0, plain.stderr
    body = json.loads(plain.stdout)
    assert "error" not in body, body
    for key in ("answer", "citations", "grounding_score", "answers_question", "confidence", "abstained", "reason",
                "closest", "timings_ms", "query_id"):
        assert key in body, key
    assert body["citations"] or body["closest"], body  # the uploaded handbook was searched
    assert streamed.returncode == 0, streamed.stderr
    lines = streamed.stdout.splitlines()
    events = [ln.removeprefix("event: ") for ln in lines if ln.startswith("event: ")]
    assert events and events[-1] == "answer", events  # SSE: token… then answer, as the README says
    last = json.loads(lines[lines.index("event: answer") + 1].removeprefix("data: "))
    assert last["query_id"] and "confidence" in last


def test_the_readmes_openai_client_example_works(api):
    base, keys, _ = api
    code = readme_block("OpenAI-compatible chat", "from openai import OpenAI")
    code = code.replace("http://localhost:8000/v1", f"{base}/v1").replace('"gwk_..."', repr(keys["alice"]))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    *_, confidence = run.stdout.split()
    assert 0.0 <= float(confidence) <= 1.0
