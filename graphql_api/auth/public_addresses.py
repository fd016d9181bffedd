"""Which IP addresses a fetch an admin asked for may reach: public unicast only.

``ipaddress``'s ``is_global`` misses ranges that reach this machine or its network: the
deprecated IPv4-compatible form (``::127.0.0.1``), SIIT (``::ffff:0:a.b.c.d``), NAT64
(``64:ff9b::/96``; on an IPv6-only subnet its gateway forwards to the embedded IPv4, private
ones included), 6to4 (``2002::/16``), site-local ``fec0::/10`` and ``192.0.0.0/24``. So the
rule here is the IANA special-purpose registries themselves, plus an allowlist for IPv6:

- IPv4: public unless in a special-purpose block of the IANA IPv4 registry or multicast;
- IPv6: only global unicast (``2000::/3``) outside the IANA IPv6 special-purpose blocks;
  everything else (``::/8`` with the compatible, mapped and SIIT forms, NAT64's local-use
  prefix, ``100::/64``, ``fc00::/7``, ``fe80::/10``, ``fec0::/10``, multicast) is refused;
- two transition forms are judged by the IPv4 they carry, which is where they lead: the
  IPv4-mapped form (how a resolver may report an IPv4 address) and the NAT64 well-known
  prefix ``64:ff9b::/96`` (how DNS64 on an IPv6-only network names an IPv4-only host).
  Every other form that embeds an IPv4 (compatible, SIIT, 6to4, Teredo) is refused whatever
  it embeds; its embedded IPv4 is checked too, so a later change to the ranges cannot let a
  private one through.
"""

from __future__ import annotations

import ipaddress
from typing import Final

IPv4 = ipaddress.IPv4Address
IPv6 = ipaddress.IPv6Address


def _v4(*blocks: str) -> tuple[ipaddress.IPv4Network, ...]:
    return tuple(ipaddress.IPv4Network(block) for block in blocks)


def _v6(*blocks: str) -> tuple[ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.IPv6Network(block) for block in blocks)


# The IANA IPv4 Special-Purpose Address Registry (every entry, the globally reachable ones
# too: none is an identity provider), with multicast and the limited broadcast.
SPECIAL_V4: Final = _v4(
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.31.196.0/24",
    "192.52.193.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "192.175.48.0/24",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
# IPv6 global unicast; the IANA IPv6 special-purpose blocks outside it are refused by not
# being in it.
GLOBAL_UNICAST_V6: Final = ipaddress.IPv6Network("2000::/3")
# The IANA IPv6 Special-Purpose Address Registry's blocks inside 2000::/3 (2001::/23 holds
# Teredo, benchmarking, AMT, ORCHID and the rest).
SPECIAL_V6: Final = _v6("2001::/23", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")
_SIIT: Final = ipaddress.IPv6Network("::ffff:0:0:0/96")


def embedded_ipv4(ip: IPv6) -> IPv4 | None:
    """The IPv4 address an IPv6 transition form carries: mapped, compatible, SIIT, NAT64's
    well-known prefix, 6to4 and Teredo (its client's); None for others."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client, where the relay delivers
    if ip in _COMPATIBLE or ip in _SIIT or ip in _NAT64:
        return IPv4(int(ip) & 0xFFFFFFFF)
    return None


def _public_v4(ip: IPv4) -> bool:
    return not any(ip in block for block in SPECIAL_V4)


def is_public(address: str) -> bool:
    """True for an address a request from the server may reach outside development."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone id names a local link
    if isinstance(ip, IPv4):
        return _public_v4(ip)
    embedded = embedded_ipv4(ip)
    if embedded is not None and not _public_v4(embedded):
        return False
    if ip.ipv4_mapped is not None or ip in _NAT64:
        return True  # judged by where it leads, checked just now
    return ip in GLOBAL_UNICAST_V6 and not any(ip in block for block in SPECIAL_V6)
