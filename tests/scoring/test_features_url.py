from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.feature_schema import LINK_FEATURES
from core.urls import InvalidUrl, normalize_url, registrable_domain, url_parts
from scoring.features.url import LEXICAL_LINK_FEATURES, is_shortener, path_tokens, url_lexical_features


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://WWW.Example.COM:80/Path?q=1#frag", "http://www.example.com/Path?q=1"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("http://example.com./a", "http://example.com/a"),
        ("example.com/a b", "http://example.com/a%20b"),
        ("http://user:secret@evil.example/login", "http://evil.example/login"),
        ("http://münchen.de/ä", "http://xn--mnchen-3ya.de/%C3%A4"),
        ("http://xn--mnchen-3ya.de/", "http://xn--mnchen-3ya.de/"),
        ("http://[2001:DB8::1]:80/", "http://[2001:db8::1]/"),
        ("  https://example.com/%7Euser  ", "https://example.com/%7Euser"),
        # What a browser visits: a backslash ends an http(s) host, "%5C@" is user-info.
        ("https://bad.example\\@example.com/login", "https://bad.example/@example.com/login"),
        ("https://bad.example%5C@example.com/login", "https://example.com/login"),
        ("https:\\\\bad.example\\login", "https://bad.example/login"),
        ("https:bad.example", "https://bad.example/"),
        ("http://bad\u3002example\uff0ecom/", "http://bad.example.com/"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://a/b/../c/%2e%2e/d", "http://a/d"),
        ("localhost:8000", "http://localhost:8000/"),
        ("//example.com/x", "http://example.com/x"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "http://",
        "http://exa mple.com/",
        "http://example.com:99999/",
        "http://[zz]/",
        "http://[fe80::1%25eth0]/",
        "http://1.2.3.4.5/",
        "http://xn--a.com/",
        "javascript:alert(1)",
        "mailto:someone@example.com",
        "foo://example.com/",
    ],
)
def test_normalize_url_rejects_garbage(raw: str) -> None:
    with pytest.raises(InvalidUrl):
        normalize_url(raw)


_label = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,10}[A-Za-z0-9])?", fullmatch=True)
_hosts = st.lists(_label, min_size=1, max_size=4).map(".".join)
_urls = st.builds(
    lambda scheme, host, port, path, query, frag: f"{scheme}://{host}{port}{path}{query}{frag}",
    st.sampled_from(["http", "HTTPS", "Http", "ftp"]),
    _hosts | st.sampled_from(["münchen.de", "例え.jp", "1.2.3.4", "[::1]", "EXAMPLE.CO.UK."]),
    st.sampled_from(["", ":80", ":443", ":8080"]),
    st.text(max_size=20).map(lambda t: "/" + t),
    st.sampled_from(["", "?a=1&b=%20x", "?q=ü ö"]),
    st.sampled_from(["", "#top", "#"]),
)


@settings(max_examples=300, deadline=None)
@given(_urls)
def test_normalize_url_is_idempotent(url: str) -> None:
    try:
        once = normalize_url(url)
    except InvalidUrl:
        return
    assert normalize_url(once) == once
    assert "#" not in once
    assert once == once.strip()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_normalize_url_never_crashes_on_arbitrary_text(text: str) -> None:
    try:
        once = normalize_url(text)
    except InvalidUrl:
        return
    assert normalize_url(once) == once


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://a.b.example.co.uk/x", "example.co.uk"),
        ("http://example.co.uk", "example.co.uk"),
        ("http://www.example.com/", "example.com"),
        ("http://deep.sub.domain.example.com/", "example.com"),
        ("www.example.com", "example.com"),
        ("http://192.168.0.1:8080/x", "192.168.0.1"),
        ("http://[2001:db8::1]/", "2001:db8::1"),
        ("http://münchen.de/", "xn--mnchen-3ya.de"),
        ("http://shop.xn--mnchen-3ya.de/", "xn--mnchen-3ya.de"),
        ("http://localhost:8000/", "localhost"),
        ("http://foo.blogspot.com/", "blogspot.com"),  # private PSL suffixes are not used
    ],
)
def test_registrable_domain(url: str, domain: str) -> None:
    assert registrable_domain(url) == domain


def test_url_parts_subdomain_and_suffix() -> None:
    parts = url_parts("https://a.b.example.co.uk/x")
    assert (parts.subdomain, parts.domain, parts.suffix) == ("a.b", "example", "co.uk")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://bit.ly/3xYz", True),
        ("http://www.bit.ly/3xYz", True),
        ("tinyurl.com/abc", True),
        ("https://t.co/abc", True),
        ("https://example.com/bit.ly", False),
        ("https://notbit.ly.example.com/", False),
    ],
)
def test_shortener_detection(url: str, expected: bool) -> None:
    assert is_shortener(url) is expected


def test_path_tokens_decode_escapes() -> None:
    assert path_tokens("http://x.com/Free-Prize/claim%20now.html?id=42") == [
        "free",
        "prize",
        "claim",
        "now",
        "html",
        "id",
        "42",
    ]


def test_lexical_features() -> None:
    f = url_lexical_features("http://win.free.prizes.example.xyz/claim/now2024?id=123")
    assert set(f) == set(LEXICAL_LINK_FEATURES)
    assert set(LEXICAL_LINK_FEATURES) <= set(LINK_FEATURES)
    assert f["url_present"] == 1.0
    assert f["url_tld_risky"] == 1.0
    assert f["url_subdomain_count"] == 3.0
    assert f["url_path_depth"] == 2.0
    assert f["url_path_token_count"] == 4.0
    assert f["url_has_query"] == 1.0
    assert f["url_is_ip_host"] == 0.0
    assert f["url_is_shortener"] == 0.0
    assert 0 < f["url_digit_ratio"] < 1


def test_lexical_features_www_is_not_a_subdomain_and_ip_hosts() -> None:
    assert url_lexical_features("https://www.example.com/")["url_subdomain_count"] == 0.0
    assert url_lexical_features("https://www.example.com/")["url_tld_risky"] == 0.0
    for ip_url in ("http://10.0.0.1/", "http://0x7f000001/", "http://[::1]/"):
        assert url_lexical_features(ip_url)["url_is_ip_host"] == 1.0


def test_no_network_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    from core import urls as url_module

    url_module._extractor.cache_clear()
    assert registrable_domain("https://a.example.com.au/") == "example.com.au"


_plain_label = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_plain_label, max_size=4),
    _plain_label,
    st.sampled_from(["com", "co.uk", "com.au", "org", "de", "xyz", "ac.jp"]),
)
def test_registrable_domain_ignores_subdomains(subdomains: list[str], name: str, suffix: str) -> None:
    host = ".".join([*subdomains, name, suffix])
    assert registrable_domain(f"https://{host}/path") == f"{name}.{suffix}"
    assert registrable_domain(host.upper()) == f"{name}.{suffix}"
    expected_subdomains = len(subdomains) - (1 if subdomains[:1] == ["www"] else 0)
    assert url_lexical_features(f"http://{host}/")["url_subdomain_count"] == expected_subdomains
