"""The post validator's fast path (single posts and batch items) returns exactly what
PostInputSerializer returns, and leaves every post the serializer rejects to the serializer
(api.post_input)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from api.post_input import FAST_PATH_COMPLETE, PostInputValidator, _Unsure
from api.serializers import PostInputSerializer

NOW = datetime.now(UTC)


def base_item() -> dict[str, Any]:
    return {
        "external_id": " p-1 ",
        "text": "Win a prize now",
        "url": "https://Promo.Example.com/win?ref=1#x",
        "author": {
            "external_id": "u-1",
            "username": "alice",
            "account_created_at": "2026-10-01T08:00:00Z",
            "email_domain": " Alice@Mail.Example.COM. ",
            "friends_count": 3,
            "followers_count": 0,
            "verified": False,
            "post_count": 10,
            "spam_post_count": 1,
            "spam_report_count": 2,
        },
        "preview": {"title": "t", "description": "d", "text": ""},
        "ip": " 2001:DB8:0:0:0:0:0:1 ",
        "journey": [
            {"step": "open_composer", "at": "2026-11-21T10:00:00+02:00"},
            {"step": " submit ", "at": "2026-11-21T08:00:05Z"},
        ],
        "share_count": 4,
        "comment_count": 0,
        "created_at": "2026-11-21T10:00:05.123456+00:00",
    }


def check(item: Any) -> None:
    validator = PostInputValidator()
    try:
        fast: Any = validator._fast(item)
    except _Unsure:
        return  # the serializer decides: nothing to compare
    expected = PostInputSerializer().run_validation(item)  # must not raise: fast accepted it
    assert fast == expected
    assert list(fast) == list(expected)
    assert list(fast["author"]) == list(expected["author"])


def test_full_item_matches_the_serializer() -> None:
    item = base_item()
    validator = PostInputValidator()
    fast = validator._fast(item)  # the common shape takes the fast path
    assert fast == PostInputSerializer().run_validation(item)
    assert fast["author"]["email_domain"] == "mail.example.com"
    assert fast["author"]["platform_post_count"] == 10
    assert fast["ip"] == "2001:db8::1"
    assert fast["external_id"] == "p-1"


def test_minimal_item_gets_the_serializer_defaults() -> None:
    item = {"external_id": "p", "author": {"external_id": "u"}, "created_at": "2026-11-21T10:00:05Z"}
    fast = PostInputValidator()._fast(item)
    assert fast == PostInputSerializer().run_validation(item)
    assert fast == {
        "external_id": "p",
        "author": {"external_id": "u"},
        "text": "",
        "url": "",
        "ip": None,
        "journey": [],
        "share_count": 0,
        "comment_count": 0,
        "created_at": datetime(2026, 11, 21, 10, 0, 5, tzinfo=UTC),
    }


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("external_id",), ""),
        (("external_id",), 12),
        (("external_id",), "x" * 256),
        (("text",), None),
        (("text",), "nul \x00"),
        (("text",), "lone \ud800"),
        (("url",), "ftp://example.com/"),
        (("url",), "https://"),
        (("ip",), "999.1.1.1"),
        (("ip",), "fe80::1%eth0"),
        (("share_count",), True),
        (("share_count",), -1),
        (("share_count",), 2**31),
        (("created_at",), "2026-11-21T10:00:05"),  # naive: the serializer's call
        (("created_at",), "1999-12-31T23:59:59Z"),
        (("created_at",), (NOW + timedelta(days=2)).isoformat()),
        (("created_at",), "2026-11-21\ud80010:00:05+00:00"),
        (("author", "verified"), "yes"),
        (("author", "email"), "a@b.c"),
        (("author",), None),
        (("preview", "extra"), "x"),
        (("journey",), {"step": "x"}),
        (("journey",), [{"step": "b", "at": "2026-11-21T10:00:05Z"}, {"step": "a", "at": "2026-11-21T10:00:00Z"}]),
        (("journey",), [{"step": "", "at": "2026-11-21T10:00:05Z"}]),
        (("unknown",), 1),
    ],
)
def test_anything_doubtful_goes_to_the_serializer(path: tuple[str, ...], value: Any) -> None:
    item = base_item()
    target = item
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(_Unsure):
        PostInputValidator()._fast(item)


def test_fast_path_knows_every_field_the_serializer_declares() -> None:
    # A field added to PostInputSerializer (or its nested author, preview, journey step) turns
    # the fast path off until api.post_input validates it too.
    assert FAST_PATH_COMPLETE


def test_without_the_fast_path_the_serializer_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    item = base_item()
    fast = PostInputValidator().validate(item)
    monkeypatch.setattr("api.post_input.FAST_PATH_COMPLETE", False)
    monkeypatch.setattr(PostInputValidator, "_fast", lambda self, item: pytest.fail("fast path used"))
    assert PostInputValidator().validate(item) == fast


def test_validate_falls_back_to_the_serializer_errors() -> None:
    item = {**base_item(), "share_count": -1}
    with pytest.raises(ValidationError) as caught:
        PostInputValidator().validate(item)
    assert "share_count" in caught.value.detail


texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", " x ", "a@B.com.", "\x00", "\ud800", "é", "x" * 300]),
    st.integers(min_value=-2, max_value=2**31),
    st.none(),
    st.booleans(),
)
stamps = st.one_of(
    st.sampled_from(
        [
            "2026-11-21T10:00:05Z",
            "2026-11-21T10:00:05",
            "2026-11-21 10:00:05+05:30",
            "20261121T100005Z",
            "1989-01-01T00:00:00Z",
            "2000-01-01T00:00:00Z",
            "9999-12-31T23:59:59-12:00",
            "not a date",
            "",
        ]
    ),
    st.none(),
    st.integers(),
)


@st.composite
def items(draw: st.DrawFn) -> dict[str, Any]:
    item = base_item()
    for key in draw(st.sets(st.sampled_from(sorted(item)), max_size=4)):
        del item[key]
    for key in draw(st.sets(st.sampled_from(["external_id", "text", "url", "ip"]), max_size=3)):
        item[key] = draw(texts)
    for key in draw(st.sets(st.sampled_from(["created_at"]), max_size=1)):
        item[key] = draw(stamps)
    for key in draw(st.sets(st.sampled_from(["share_count", "comment_count"]), max_size=2)):
        item[key] = draw(texts)
    author = item.get("author")
    if isinstance(author, dict):
        for key in draw(st.sets(st.sampled_from(sorted(author)), max_size=3)):
            del author[key]
        for key in draw(st.sets(st.sampled_from(["external_id", "username", "email_domain", "verified"]), max_size=2)):
            author[key] = draw(texts)
        if draw(st.booleans()):
            author["account_created_at"] = draw(stamps)
    if draw(st.booleans()):
        item["journey"] = [{"step": draw(texts), "at": draw(stamps)} for _ in range(draw(st.integers(0, 3)))]
    if draw(st.booleans()):
        item["preview"] = draw(st.one_of(st.none(), st.fixed_dictionaries({"title": texts})))
    return item


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item=items())
def test_fast_path_agrees_with_the_serializer(item: dict[str, Any]) -> None:
    check(item)
