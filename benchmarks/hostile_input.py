"""Hostile-input run against a running server: at least 10,000 requests, zero 5xx.

Four sources of requests, all over HTTP on the loopback interface:
- hypothesis: raw bytes and JSON with hostile keys and values on every API endpoint that takes
  a body (tests/moderation/hostile_bodies.py), derandomized;
- urls: hostile spellings of a link (tests/url_spellings.py: backslashes, '@', Unicode dots,
  percent-encoded and IDNA hosts, IPv4 and IPv6 forms) as a post's url and as a domain block;
- schemathesis: every operation of the server's own /api/schema/, in positive and negative
  data generation modes;
- hand cases: the crashes found by hand (lone surrogates, overlong UTF-8, NaN, deep nesting, a
  10 MB key, a 500-item batch of bad items, a foreign Host header on an API path, impossible
  dates on the dashboard pages and the audit CSV, hostile dataset uploads).

It reports the count by status class, the 5xx count and the duration, and exits 1 on any 5xx.

    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/mod_bench \\
        REDIS_URL=redis://127.0.0.1:6379/3 CACHE_URL=redis://127.0.0.1:6379/4 \\
        CELERY_BROKER_URL=redis://127.0.0.1:6379/5
    python benchmarks/hostile_input.py               # starts gunicorn on 127.0.0.1 (test settings)
    python benchmarks/hostile_input.py --url http://127.0.0.1:8000   # a server already running

When it starts the server it migrates DATABASE_URL first and raises the per-key rate limit
(API_THROTTLE_RATE) so the run measures input handling, not throttling. Either way it creates
its own source, API key and staff user in that database. Accepted posts are enqueued for
scoring on CELERY_BROKER_URL as usual (no worker is needed). Loopback only, bounded in count
(--examples) and time (--max-seconds). Never part of the test suite."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class Budget(Exception):
    """--max-seconds ran out."""


class Tally:
    """Counts answers by status class and keeps a few 5xx samples."""

    def __init__(self, max_seconds: float, *, trace: bool = False) -> None:
        self.trace = trace
        self.started = time.monotonic()
        self.deadline = self.started + max_seconds
        self.by_class: Counter[str] = Counter()
        self.by_source: Counter[str] = Counter()
        self.server_errors: list[str] = []
        # The two largest hand cases: what they cost to answer (the finding: 20 MB and 10-13 MB).
        self.large: dict[str, dict[str, Any]] = {}

    def record(self, source: str, method: str, path: str, status: int, body: bytes = b"") -> None:
        self.by_class[f"{status // 100}xx"] += 1
        self.by_source[source] += 1
        if self.trace and source == "hand":
            print(status, method, path, file=sys.stderr)
        if status >= 500 and len(self.server_errors) < 20:
            self.server_errors.append(f"{source} {method} {path} -> {status}: {body[:200]!r}")
        if time.monotonic() > self.deadline:
            raise Budget

    @property
    def total(self) -> int:
        return sum(self.by_class.values())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int, log_path: Path) -> subprocess.Popen[bytes]:
    import requests

    env = {**os.environ, "API_THROTTLE_RATE": "1000000/min", "DEBUG": "0"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)
    log = log_path.open("wb")
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-b", f"127.0.0.1:{port}"]
    command += ["-w", "2", "-k", "gthread", "--threads", "4", "--timeout", "60"]
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited: {log_path.read_text()[-2000:]}")
        try:
            requests.get(f"http://127.0.0.1:{port}/api/v1/posts/x", timeout=2)
            return proc
        except requests.RequestException:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("gunicorn did not answer within 60 s")


def credentials() -> tuple[str, str, str]:
    """A fresh source's API key and a staff user with the admin role: (key, username, password)."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User

    from moderation.models import ALL_SCOPES, Source
    from moderation.services.api_keys import api_key_create

    suffix = uuid.uuid4().hex[:8]
    source = Source.objects.create(name=f"hostile-{suffix}", slug=f"hostile-{suffix}")
    _, raw_key = api_key_create(source=source, name="hostile input run", scopes=ALL_SCOPES)
    username, password = f"hostile-{suffix}", uuid.uuid4().hex
    user = User.objects.create_user(username=username, password=password, is_staff=True)
    group, _ = Group.objects.get_or_create(name="admin")
    user.groups.add(group)
    return raw_key, username, password


def run_hypothesis(base: str, key: str, tally: Tally, examples: int) -> None:
    import requests
    from hypothesis import HealthCheck, given, settings

    from tests.moderation.hostile_bodies import BODY_ENDPOINTS, hostile_bodies

    http = requests.Session()
    http.headers.update({"Authorization": f"Api-Key {key}", "Content-Type": "application/json"})

    def endpoint_run(method: str, path: str) -> None:
        @settings(
            max_examples=examples,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(body=hostile_bodies())
        def send(body: bytes) -> None:
            response = http.request(method, base + path, data=body, timeout=60)
            tally.record("hypothesis", method, path, response.status_code, response.content)

        send()

    for method, path in BODY_ENDPOINTS:
        endpoint_run(method, path)


def run_url_spellings(base: str, key: str, tally: Tally, examples: int) -> None:
    """Hostile spellings of a URL (tests/url_spellings.py) as a post's link and as a domain to
    block: a browser's reading is stored, or a 400, never a 5xx."""
    import requests
    from hypothesis import HealthCheck, given, settings

    from tests.moderation.api_helpers import post_payload
    from tests.url_spellings import hostile_urls

    http = requests.Session()
    http.headers.update({"Authorization": f"Api-Key {key}", "Content-Type": "application/json"})

    @settings(
        max_examples=examples, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(url=hostile_urls)
    def send(url: str) -> None:
        post = post_payload(f"url-{uuid.uuid4().hex}", url=url)
        response = http.post(base + "/api/v1/posts", data=json.dumps(post), timeout=60)
        tally.record("urls", "POST", "/api/v1/posts", response.status_code, response.content)
        block = {"domain": url, "reason": "hostile spelling"}
        response = http.post(base + "/api/v1/blocklist/domains", data=json.dumps(block), timeout=60)
        tally.record("urls", "POST", "/api/v1/blocklist/domains", response.status_code, response.content)

    send()


def run_schemathesis(base: str, key: str, tally: Tally, examples: int) -> None:
    import hypothesis
    import schemathesis
    from hypothesis import HealthCheck, Phase
    from schemathesis import GenerationMode
    from schemathesis.core.result import Ok

    schema = schemathesis.openapi.from_url(base + "/api/schema/?format=json")
    headers = {"Authorization": f"Api-Key {key}"}

    def operation_run(operation: Any, mode: GenerationMode) -> None:
        @hypothesis.settings(
            max_examples=examples,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @hypothesis.given(case=operation.as_strategy(generation_mode=mode, headers=headers))
        def send(case: Any) -> None:
            response = case.call(base_url=base, timeout=60)
            tally.record(f"schemathesis-{mode.value}", case.method, case.path, response.status_code, response.content)

        # Unsatisfiable: no schema-violating input exists for this operation.
        with contextlib.suppress(hypothesis.errors.Unsatisfiable):
            send()

    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            raise SystemExit(f"the server's schema has an invalid operation: {result.err()}")
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            operation_run(result.ok(), mode)


def _login(base: str, username: str, password: str) -> Any:
    import requests

    http = requests.Session()
    http.get(base + "/accounts/login/", timeout=30)
    token = http.cookies.get("csrftoken", "")
    response = http.post(
        base + "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token},
        headers={"Referer": base + "/accounts/login/"},
        timeout=30,
        allow_redirects=False,
    )
    if response.status_code != 302:
        raise SystemExit(f"login failed: {response.status_code}")
    return http


def run_hand_cases(base: str, key: str, username: str, password: str, tally: Tally, repeat: int) -> None:
    import requests

    from tests.moderation.api_helpers import post_payload
    from tests.moderation.hostile_bodies import BODY_ENDPOINTS, HAND_BODIES

    api = requests.Session()
    api.headers.update({"Authorization": f"Api-Key {key}", "Content-Type": "application/json"})
    host = urlsplit(base).netloc
    bad_batch = json.dumps(
        {"posts": [{**post_payload(f"h-{i}"), **{"x" * 200 + str(j): "v" for j in range(100)}} for i in range(500)]}
    ).encode()
    big_key = json.dumps({**post_payload("h-big"), "k" * (10 * 1024 * 1024): 1}).encode()
    for _ in range(repeat):
        for method, path in BODY_ENDPOINTS:
            for body in HAND_BODIES:
                response = api.request(method, base + path, data=body, timeout=60)
                tally.record("hand", method, path, response.status_code, response.content)
        for name, body in (("500 bad items", bad_batch), ("10 MB key", big_key)):
            path = "/api/v1/posts/batch" if body is bad_batch else "/api/v1/posts"
            started = time.monotonic()
            response = api.post(base + path, data=body, timeout=120)
            tally.large[name] = {
                "request_bytes": len(body),
                "status": response.status_code,
                "response_bytes": len(response.content),
                "seconds": round(time.monotonic() - started, 2),
            }
            tally.record("hand", "POST", path, response.status_code, response.content)
        for path in ("/api/v1/posts/p-1", "/dashboard/"):
            response = api.get(base + path, headers={"Host": "evil.example"}, timeout=30)
            tally.record("hand", "GET", path + " (foreign Host)", response.status_code, response.content)
        for path in ("/api/v1/posts/%ED%A0%80", "/api/v1/blocklist/ips?page_size=0&blocked_before=2026-02-30"):
            response = api.get(base + path, timeout=30)
            tally.record("hand", "GET", path, response.status_code, response.content)
    staff = _login(base, username, password)
    token = staff.cookies.get("csrftoken", "")
    queries = ["date_from=2026-02-30", "date_to=0000-00-00", "date_from=0001-01-01", "date_to=9999-12-31"]
    queries += ["score_min=nan&ip=%00&q=%00", "actor=%00&cursor=%C0%AF"]
    uploads = [
        ("deep.jsonl", b'{"text": "a", "label": "spam", "features": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"),
        ("big-field.csv", b"text,label\n" + b'"' + b"x" * (129 * 1024) + b'",spam\n'),
        ("dates.csv", b"text,label,decided_at\na,spam,2026-02-30\nb,ham,0001-01-01T00:00:00+05:00\n"),
        ("nan.jsonl", b'{"text": "a", "label": "spam", "final_score": NaN}\n'),
        ("nul.jsonl", b'{"text": "a\\u0000", "label": "spam"}\n{"text": "\\udc00", "label": "ham"}\n'),
        ("rows.jsonl", b"{}\n" * 200_000),
    ]
    for _ in range(repeat):
        for page in ("/dashboard/", "/dashboard/audit/", "/dashboard/audit.csv", "/dashboard/focus/"):
            for query in queries:
                response = staff.get(f"{base}{page}?{query}", timeout=30, allow_redirects=False)
                tally.record("hand", "GET", f"{page}?{query}", response.status_code, response.content)
        for name, content in uploads:
            response = staff.post(
                base + "/dashboard/ml/datasets/import/",
                data={"source": "hostile", "csrfmiddlewaretoken": token},
                files={"file": (name, content)},
                headers={"Referer": base + "/dashboard/ml/datasets/", "Host": host},
                timeout=120,
                allow_redirects=False,
            )
            tally.record("hand", "POST", f"/dashboard/ml/datasets/import/ ({name})", response.status_code)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running server (loopback only); default: start gunicorn")
    parser.add_argument("--hypothesis-examples", type=int, default=1200, help="per body-taking endpoint")
    parser.add_argument("--schemathesis-examples", type=int, default=250, help="per operation and mode")
    parser.add_argument("--url-examples", type=int, default=600, help="URL spellings, two requests each")
    parser.add_argument("--hand-repeat", type=int, default=3, help="times each hand case is sent")
    parser.add_argument("--max-seconds", type=float, default=1800)
    parser.add_argument("--trace", action="store_true", help="print each hand case's status")
    parser.add_argument("--log", type=Path, default=Path("/tmp/hostile_input_gunicorn.log"))
    args = parser.parse_args()

    server = None
    if args.url:
        if urlsplit(args.url).hostname not in LOOPBACK:
            raise SystemExit("--url must be a loopback address")
        base = args.url.rstrip("/")
    else:
        port = _free_port()
        server = start_server(port, args.log)
        base = f"http://127.0.0.1:{port}"
    tally = Tally(args.max_seconds, trace=args.trace)
    phases: dict[str, float] = {}
    try:
        # Inside the try: a failure here still stops the server this run started.
        key, username, password = credentials()
        for name, run in (
            ("hand", lambda: run_hand_cases(base, key, username, password, tally, args.hand_repeat)),
            ("hypothesis", lambda: run_hypothesis(base, key, tally, args.hypothesis_examples)),
            ("urls", lambda: run_url_spellings(base, key, tally, args.url_examples)),
            ("schemathesis", lambda: run_schemathesis(base, key, tally, args.schemathesis_examples)),
        ):
            started = time.monotonic()
            run()
            phases[name] = round(time.monotonic() - started, 1)
    except Budget:
        print(f"stopped: --max-seconds {args.max_seconds} ran out", file=sys.stderr)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    summary = {
        "requests": tally.total,
        "by_status_class": dict(sorted(tally.by_class.items())),
        "by_source": dict(sorted(tally.by_source.items())),
        "server_errors": tally.by_class.get("5xx", 0),
        "duration_s": round(time.monotonic() - tally.started, 1),
        "phase_s": phases,
        "large_cases": tally.large,
        "server_error_samples": tally.server_errors,
    }
    print(json.dumps(summary, indent=2))
    return 1 if summary["server_errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
