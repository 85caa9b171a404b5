"""Tests for service.egress.resolver: the guarded resolver, its install and uninstall."""

from __future__ import annotations

from typing import Any

from twisted.internet.interfaces import IHostnameResolver

from service.egress.resolver import (
    GuardedResolver,
    find_guarded_resolver,
    install_guarded_resolver,
    uninstall_guarded_resolver,
)
from tests.resolvers import TABLE, FakeReactor, FakeResolver, FakeStats, RecordingReceiver

# ---------------------------------------------------------------------------------------------
# GuardedResolver with a fake wrapped resolver


def test_guarded_resolver_forwards_only_public_addresses() -> None:
    stats = FakeStats()
    guard = GuardedResolver(FakeResolver(TABLE), stats=stats)
    assert IHostnameResolver.providedBy(guard)
    receiver = RecordingReceiver()
    guard.resolveHostName(receiver, "mixed.example", 443)
    assert receiver.addresses == ["93.184.216.34", "2606:4700::1"]
    assert len(receiver.began) == 1 and receiver.completed == 1
    assert guard.dropped_count == 3
    assert not guard.was_blocked("mixed.example")
    assert stats.values == {"scrapespy/egress_guard/dropped_addresses": 3}


def test_guarded_resolver_all_dropped_is_remembered() -> None:
    stats = FakeStats()
    guard = GuardedResolver(FakeResolver(TABLE), stats=stats)
    receiver = RecordingReceiver()
    guard.resolveHostName(receiver, "private.example", 80)
    assert receiver.addresses == [] and receiver.completed == 1
    assert guard.was_blocked("private.example")
    assert guard.was_blocked("PRIVATE.example.")
    assert not guard.was_blocked("public.example")
    assert guard.blocked_count == 1
    assert stats.values["scrapespy/egress_guard/resolver_blocked"] == 1


def test_guarded_resolver_non_ip_addresses_are_dropped() -> None:
    guard = GuardedResolver(FakeResolver(TABLE))
    receiver = RecordingReceiver()
    guard.resolveHostName(receiver, "unix.example")
    assert receiver.addresses == []
    assert guard.was_blocked("unix.example")


def test_guarded_resolver_real_dns_failure_is_not_a_block() -> None:
    guard = GuardedResolver(FakeResolver(TABLE))
    receiver = RecordingReceiver()
    guard.resolveHostName(receiver, "nxdomain.example")
    assert receiver.addresses == [] and receiver.completed == 1
    assert not guard.was_blocked("nxdomain.example")
    assert guard.blocked_count == 0


def test_guarded_resolver_allow_host_passes_through() -> None:
    guard = GuardedResolver(FakeResolver(TABLE), allow_host=lambda host: host == "proxy.internal")
    receiver = RecordingReceiver()
    guard.resolveHostName(receiver, "proxy.internal", 3128)
    assert receiver.addresses == ["10.0.0.5"]
    other = RecordingReceiver()
    guard.resolveHostName(other, "rebind.example")
    assert other.addresses == []


def test_guarded_resolver_block_memory_expires_and_is_bounded() -> None:
    now = [1000.0]
    guard = GuardedResolver(
        FakeResolver({f"h{i}.example": ["10.0.0.1"] for i in range(10)}),
        block_ttl=5.0,
        max_remembered=3,
        clock=lambda: now[0],
    )
    for i in range(10):
        guard.resolveHostName(RecordingReceiver(), f"h{i}.example")
    assert len(guard._blocked) == 3
    assert not guard.was_blocked("h0.example")
    assert guard.was_blocked("h9.example")
    now[0] += 6
    assert not guard.was_blocked("h9.example")


def test_install_is_idempotent_and_uninstall_restores() -> None:
    fake = FakeReactor()
    original_name, original_simple = fake.nameResolver, fake.resolver
    assert install_guarded_resolver(fake, allow_private=True) is None
    assert fake.nameResolver is original_name

    guard = install_guarded_resolver(fake, allow_private=False, allow_hosts=["proxy.internal"])
    assert isinstance(guard, GuardedResolver)
    assert fake.nameResolver is guard and guard.wrapped is original_name
    again = install_guarded_resolver(fake, allow_private=False, allow_hosts=["LOCALHOST"])
    assert again is guard
    assert guard.allow_host is not None
    assert guard.allow_host("proxy.internal") and guard.allow_host("localhost")
    assert not guard.allow_host("127.0.0.1")

    # Something else wrapping the guard: still found, not wrapped twice.
    class Wrapper:
        def __init__(self, original_resolver: Any) -> None:
            self.original_resolver = original_resolver

    fake.nameResolver = Wrapper(guard)
    assert find_guarded_resolver(fake) is guard
    assert install_guarded_resolver(fake, allow_private=False) is guard
    fake.nameResolver = guard

    assert uninstall_guarded_resolver(fake)
    assert fake.nameResolver is original_name and fake.resolver is original_simple
    assert not uninstall_guarded_resolver(fake)
