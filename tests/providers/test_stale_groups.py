"""Stale desktop cgroups are removed; a starting desktop's empty group is not (a pool makes its
envs' providers, each sweeping, while earlier envs' desktops start)."""

from __future__ import annotations

import uuid

import pytest

from osworld_gym.providers.local.limits import DesktopCgroups, DesktopLimits, remove_stale_groups


def test_only_empty_groups_of_no_live_desktop_and_not_young_go() -> None:
    marker = uuid.uuid4().hex
    groups = DesktopCgroups.create(marker, DesktopLimits())
    if not groups.groups:
        pytest.skip("no cgroup can be made here (root with cgroup controllers needed)")
    try:
        paths = {group.path for group in groups.groups}
        # Empty, just made, of a live desktop: kept, whatever its age.
        remove_stale_groups({marker}, min_age_s=0)
        assert all(path.is_dir() for path in paths)
        # Empty and of no live desktop, but young (another driver's, starting): kept.
        remove_stale_groups(set())
        assert all(path.is_dir() for path in paths)
        # Empty, of no live desktop, old enough: stale.
        removed = remove_stale_groups(set(), min_age_s=0)
        assert paths <= set(removed) and not any(path.exists() for path in paths)
    finally:
        groups.remove()
