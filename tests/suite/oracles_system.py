"""The desktop-basics oracles for system tasks; they live in the package (the `oracle` agent)."""

from osworld_gym.policies.oracles.desktop_basics_system import ORACLES

__all__ = ["ORACLES"]
