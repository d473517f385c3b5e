"""Task setup: everything between a task file and a desktop ready for its first step.

- ``interpreter``: OSWorld's setup steps (``config``, ``postconfig``) run through the guest.
- ``chrome``, ``cdp``: the Chrome steps, and the DevTools connection they (and getters) use.
- ``downloads``, ``asset_fetch``: the host-side asset cache, and filling it ahead of time.
- ``support``, ``runnable``: which tasks the package can run and score, and which can run on a
  given provider here, with the reason for each that cannot.
"""
