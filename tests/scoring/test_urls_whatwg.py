"""core.urls against whatwg-url, the URL Standard's reference implementation (its editors'
npm package, installed by `make test-tools`), over the spellings that make a link read one way
by a filter and another way by a browser: backslashes, '@', tabs and newlines, ideographic and
fullwidth dots, percent-encoding in the host, IDNA, IPv4 in short, decimal, hex and octal form,
IPv6 with zones.

Each hypothesis example is a batch of URLs sent to one node process (JSON in, JSON out). The
property: for every http(s) input, we refuse exactly what the reference refuses, and otherwise
read the same host (after our identity normalization: trailing dots removed), port, path and
query."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.urls import HOST_MAX_CHARS, InvalidUrl, url_parts
from tests.url_spellings import hostile_urls

ROOT = Path(__file__).resolve().parents[2]
WHATWG_URL = ROOT / "var" / "test-tools" / "node_modules" / "whatwg-url"

# Reads a JSON list of strings on stdin, writes one entry per string: null where the URL
# Standard's parser fails, else the parts core.urls keeps.
_REFERENCE_JS = """
const { URL } = require(process.argv[1]);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((href) => {
    try {
      const u = new URL(href);
      return { scheme: u.protocol.slice(0, -1), host: u.hostname, port: u.port,
               path: u.pathname, query: u.search.slice(1) };
    } catch (e) {
      return null;
    }
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def reference(urls: list[str]) -> list[dict[str, str] | None]:
    node = shutil.which("node")
    assert node, "node (Node.js 20+) is needed for the URL reference tests"
    assert WHATWG_URL.exists(), "whatwg-url is missing: run `make test-tools` (part of `make test`)"
    done = subprocess.run(
        [node, "-e", _REFERENCE_JS, str(WHATWG_URL)],
        input=json.dumps(urls),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: list[dict[str, str] | None] = json.loads(done.stdout)
    assert len(result) == len(urls)
    return result


def ours(url: str) -> dict[str, str] | None:
    try:
        parts = url_parts(url)
    except InvalidUrl:
        return None
    port = parts.normalized.removeprefix(f"{parts.scheme}://{parts.host}").partition("/")[0].removeprefix(":")
    return {"scheme": parts.scheme, "host": parts.host, "port": port, "path": parts.path, "query": parts.query}


def expected(ref: dict[str, str] | None) -> dict[str, str] | None:
    """The reference's reading under our identity conventions (core.urls' docstring)."""
    if ref is None:
        return None
    host = ref["host"].rstrip(".") or ref["host"]
    if len(host) > HOST_MAX_CHARS:
        return None
    return {**ref, "host": host}


def assert_agree(urls: list[str]) -> None:
    mismatches = [
        (url, ours(url), expected(ref))
        for url, ref in zip(urls, reference(urls), strict=True)
        if ours(url) != expected(ref)
    ]
    assert not mismatches, "\n".join(f"{url!r}: ours {mine}, reference {theirs}" for url, mine, theirs in mismatches)


@pytest.mark.parametrize(
    "url",
    [
        "https://bad.example\\@example.com/login",
        "https://bad.example%5C@example.com/login",
        "https://bad.example\t@example.com/",
        "https:\\\\bad.example\\login",
        "https:bad.example/login",
        "http://bad\u3002example\uff0ecom\uff61/",
        "http://ex%41mple.com/",
        "http://0x7f.1/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://1.2.3.4.5/",
        "http://[fe80::1%25eth0]/",
        "http://[::a9fe:a9fe]/",
        "http://münchen.de/ä",
        "http://xn--a.com/",
        "http://a..b/",
        "http://./",
    ],
)
def test_known_spellings_read_as_the_reference_reads_them(url: str) -> None:
    assert_agree([url])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(hostile_urls, min_size=50, max_size=50))
def test_hostile_spellings_read_as_the_reference_reads_them(urls: list[str]) -> None:
    assert_agree(urls)


def test_reference_refuses_and_reads_what_it_should() -> None:
    """The oracle itself: it fails on a zone and reads a backslash as the end of the host."""
    ref = reference(["http://[fe80::1%25eth0]/", "https://bad.example\\@example.com/login"])
    assert ref[0] is None
    assert ref[1] is not None and ref[1]["host"] == "bad.example"
