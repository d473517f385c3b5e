"""PID 1 of a sandboxed desktop: holds its namespaces and reaps orphaned processes.

Every process of a ``local`` desktop joins one PID and user namespace, as the processes of a
VM share one system: ``pkill`` or ``pgrep`` in a task sees the apps the guest launched, the
terminal the window manager opened and the services the session bus started. This process is
that namespace's init (``bwrap --as-pid-1``). It reaps the processes that are re-parented to
it, ignores termination signals sent from inside the desktop (``kill -TERM 1``, ``pkill
python``) and exits on one sent from the host, which stops every process of the desktop at
once (the kernel kills a PID namespace with its init). Run as
``python -m osworld_gym.providers.local.sandbox_init``.
"""

from __future__ import annotations

import os
import signal

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _reap_all() -> None:
    """Collect every child that has exited, without blocking."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _never_called(signum: int, frame: object) -> None:
    """A handler at all: an init with the default one never receives these signals."""


def main() -> None:
    """Reap children whenever one exits; exit on a stop signal from outside the namespace."""
    watched = {signal.SIGCHLD, *_STOP_SIGNALS}
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _never_called)
    # Blocked and taken with sigwaitinfo: nothing is lost between two waits, and the sender is
    # known (a process outside this PID namespace appears as PID 0).
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    while True:
        _reap_all()
        info = signal.sigwaitinfo(watched)
        if info.si_signo != signal.SIGCHLD and info.si_pid == 0:
            return


if __name__ == "__main__":
    main()
