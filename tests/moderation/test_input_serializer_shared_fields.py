"""Input serializers share one set of fields per class (InputSerializer.fields): validating one
payload never leaks into another, sequentially or from concurrent threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from api.serializers import PostInputSerializer
from tests.moderation.api_helpers import post_payload


def _validate(payload: dict) -> tuple[bool, dict, dict]:
    serializer = PostInputSerializer(data=payload)
    ok = serializer.is_valid()
    return ok, (dict(serializer.validated_data) if ok else {}), serializer.errors


def _bad(i: int) -> dict:
    payload = post_payload(f"bad-{i}", url="ftp://nope", unexpected=i)
    payload["author"] = {**payload["author"], "external_id": f"u-{i}", "friends_count": "many"}
    return payload


def test_the_fields_are_built_once_per_class():
    assert PostInputSerializer().fields is PostInputSerializer(data={}).fields


def test_validations_interleaved_keep_their_own_results_and_errors():
    bad, good = PostInputSerializer(data=_bad(1)), PostInputSerializer(data=post_payload("good"))
    assert good.is_valid(), good.errors
    assert not bad.is_valid()
    assert set(bad.errors) == {"url", "author", "unexpected"}
    assert set(bad.errors["author"]) == {"friends_count"}
    assert good.validated_data["external_id"] == "good"
    assert good.validated_data["author"]["email_domain"] == "mailinator.com"  # validate_email_domain ran
    assert good.errors == {}


def test_concurrent_validations_do_not_mix():
    payloads = [post_payload(f"ok-{i}", author={"external_id": f"u-{i}"}) if i % 2 else _bad(i) for i in range(64)]
    expected = [_validate(p) for p in payloads]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(_validate, payloads)) == expected
    assert expected[1][1]["author"]["external_id"] == "u-1" and not expected[0][0]
