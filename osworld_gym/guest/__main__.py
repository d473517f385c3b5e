"""``python -m osworld_gym.guest --display :N --port P`` runs the guest server."""

import sys

from osworld_gym.guest.identity import take_split_identity

take_split_identity()  # before anything else (see osworld_gym.providers.local.split_identity)

from osworld_gym.guest.server import main  # noqa: E402 - after the line above, on purpose

sys.exit(main())
