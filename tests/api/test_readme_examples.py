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


def test_the_readmes_curl_examples_work(api):
    if shutil.which("curl") is None:  # .ci/run installs it, as it installs chromium for the browser tests
        pytest.skip("curl is not installed (apt-get install curl): the README's curl examples need it")
    base, keys, _ = api
    block = readme_block("## HTTP API", "curl -s localhost:8000/v1/query")
    commands = re.findall(r"^(curl .*?\\\n.*?)(?:\s+#.*)?$", block, re.M)
    assert len(commands) == 2, block  # the JSON answer and the streamed one
    env = {**os.environ, "KEY": keys["alice"]}
    plain, streamed = (subprocess.run(["bash", "-c", c.replace("localhost:8000", _address(base))], env=env,
                                      capture_output=True, text=True, timeout=300) for c in commands)
    assert plain.returncode == 0, plain.stderr
    body = json.loads(plain.stdout)
    assert "error" not in body, body
    for key in ("answer", "citations", "grounding_score", "answers_question", "confidence", "abstained", "reason",
                "closest", "timings_ms", "query_id"):
        assert key in body, key
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
