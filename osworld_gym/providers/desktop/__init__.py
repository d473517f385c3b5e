"""The desktop's own parts: what runs inside every Linux desktop we build.

Shared by ``local`` desktops and the docker and qemu images: the GNOME session
(``gnome_session``, ``gnome_extension/``, and ``gnome_image``, its start in an image), the
window manager of the minimal session, the X server's state checks, the first ``/home/user``
(``home_skeleton``), the command wrappers on the desktop's ``PATH`` (``bin/``), Chromium
presented as Google Chrome (``chrome_branding``) and the date-and-time service
(``timedate_service``).
"""
