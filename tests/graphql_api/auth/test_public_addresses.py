"""Every special-purpose range of the IANA registries is refused, and every IPv6 form that embeds one."""

from __future__ import annotations

import ipaddress

import pytest

from graphql_api.auth.public_addresses import embedded_ipv4, is_public


@pytest.mark.parametrize(
    "address",
    [
        "::127.0.0.1",  # IPv4-compatible (deprecated)
        "::8.8.8.8",  # compatible, even of a public address: a deprecated form
        "::ffff:0:7f00:1",  # SIIT
        "::ffff:0:808:808",
        "64:ff9b::7f00:1",  # NAT64 well-known prefix, to the loopback
        "64:ff9b::a9fe:a9fe",  # to the metadata service
        "64:ff9b::a00:1",  # to 10.0.0.1
        "64:ff9b::c0a8:101",  # to 192.168.1.1
        "64:ff9b:1::808:808",  # NAT64 local-use prefix
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:808:808::1",  # 6to4 of a public address: 2002::/16 is special-purpose
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:db8::1",
        "3fff::1",  # documentation (RFC 9637)
        "fec0::1",  # site-local (deprecated)
        "fc00::1",
        "fe80::1",
        "ff02::1",
        "100::1",  # discard-only
        "5f00::1",  # SRv6 SIDs: outside 2000::/3
        "192.0.0.8",  # IETF protocol assignments
        "192.0.0.170",
        "192.88.99.1",  # 6to4 relay anycast
        "198.18.0.1",  # benchmarking
        "203.0.113.5",
        "240.0.0.1",
        "255.255.255.255",
    ],
)
def test_is_public__special_purpose__false(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2a00:1450:4001::1"],
)
def test_is_public__public__true(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize(
    ("address", "embedded"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::127.0.0.1", "127.0.0.1"),
        ("::ffff:0:7f00:1", "127.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2002:a00:1::", "10.0.0.1"),
        ("2606:4700::1111", None),
    ],
)
def test_embedded_ipv4__every_transition_form(address: str, embedded: str | None) -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(address))
    assert (None if found is None else str(found)) == embedded
