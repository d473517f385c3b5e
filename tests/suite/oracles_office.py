"""The desktop-basics oracles for office tasks; they live in the package (the `oracle` agent)."""

from osworld_gym.policies.oracles.desktop_basics_office import ORACLES

__all__ = ["ORACLES"]
