"""axe-core in the browser tests: the pinned axe.min.js (make deploy-tools) run over a page.

The script goes in through Playwright with the page's Content-Security-Policy bypassed for the
test's own browser context only: the policy allows no inline script, and axe is test tooling,
not part of the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).resolve().parents[2] / "var" / "deploy-tools" / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe.run's violations for the page as it is now: rule id, impact, and the first targets."""
    if not AXE_JS.exists():
        raise AssertionError(f"{AXE_JS} missing: run `make deploy-tools`")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE_JS.read_text())
    results = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "nodes": len(v["nodes"]),
            "targets": [n["target"] for n in v["nodes"][:3]],
        }
        for v in results["violations"]
    ]
