"""Model-output dialects: each turns one model response into a ``ParseResult``.

Every dialect module exposes ``parse(text, *, screen_size, strict=False, **options)``; the
registry in ``osworld_gym.actions.registry`` maps dialect names to them.
"""
