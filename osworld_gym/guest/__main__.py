"""``python -m osworld_gym.guest --display :N --port P`` runs the guest server."""

import sys

from osworld_gym.guest.server import main

sys.exit(main())
