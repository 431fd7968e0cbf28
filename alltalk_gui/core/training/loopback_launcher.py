"""``accelerate launch`` whose rendezvous listens on loopback only: ``python -m`` this module with accelerate's
own arguments.

For several processes on one machine, torchrun (inside ``accelerate launch``) starts a TCPStore server that the
processes meet at. ``--main_process_ip 127.0.0.1`` tells the processes where to connect, but the server itself
binds the wildcard address (``*:port``, seen with ``ss -ltn``): an unauthenticated port open to the network for
the whole run. TCPStore can take a socket that is already listening (``master_listen_fd``); this module makes
torchrun's static rendezvous pass it one bound to 127.0.0.1, then runs accelerate's launcher unchanged.

Where that is not possible (Windows, whose TCPStore takes no file descriptor, or a PyTorch without the
parameter) the launch goes on as accelerate would do it; the loopback address and a free port still apply.
"""

from __future__ import annotations

import socket
import sys

LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def loopback_listener(port: int) -> int:
    """A socket listening on 127.0.0.1:``port``; returns its file descriptor, which the caller then owns."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock.detach()


def bind_rendezvous_to_loopback() -> bool:
    """Make torchrun's static rendezvous serve its TCPStore from a loopback-only socket; False if it cannot."""
    if sys.platform == "win32":
        return False
    try:
        from torch.distributed.elastic.rendezvous import static_tcp_rendezvous as rendezvous
    except ImportError:
        return False
    original = rendezvous.TCPStore
    if "master_listen_fd" not in (original.__init__.__doc__ or ""):
        return False

    def loopback_store(host_name, port, world_size=None, is_master=False, *args, **kwargs):
        if is_master and host_name in LOOPBACK_HOSTS and kwargs.get("master_listen_fd") is None:
            kwargs["master_listen_fd"] = loopback_listener(port)
        return original(host_name, port, world_size, is_master, *args, **kwargs)

    rendezvous.TCPStore = loopback_store
    return True


def main() -> int:
    from accelerate.commands.launch import main as accelerate_launch

    bind_rendezvous_to_loopback()
    sys.argv[0] = "accelerate launch"
    accelerate_launch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
