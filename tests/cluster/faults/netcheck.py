# SPDX-License-Identifier: Apache-2.0
"""``python -m tests.cluster.faults.netcheck``, run by test_network.py inside ``unshare -n`` (FAULTS_NETNS=1): two
member namespaces on the campaign's bridge; prints whether a datagram from member 0 reaches member 1 before a cut,
during it, and after healing (``before=1 cut=0 healed=1`` when partitions work)."""
from __future__ import annotations

import subprocess
import sys

from tests.cluster.faults.harness import NamespaceNetwork

RECEIVE = ("import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind((sys.argv[1],5000)); "
           "s.settimeout(3); print('ready',flush=True)\ntry:\n s.recvfrom(16); print(1)\nexcept OSError: print(0)")
SEND = ("import socket,sys,time\nfor _ in range(20):\n socket.socket(socket.AF_INET,socket.SOCK_DGRAM)"
        ".sendto(b'x',(sys.argv[1],5000)); time.sleep(0.05)")


def delivered(network: NamespaceNetwork) -> str:
    """'1' when member 0's datagrams reach member 1, else '0'."""
    receiver = subprocess.Popen([*network.prefix(1), sys.executable, "-c", RECEIVE, network.member_host(1)],
                                stdout=subprocess.PIPE, text=True)
    assert receiver.stdout is not None
    assert receiver.stdout.readline().strip() == "ready"
    subprocess.run([*network.prefix(0), sys.executable, "-c", SEND, network.member_host(1)], check=True, timeout=30)
    out, _ = receiver.communicate(timeout=30)
    return out.strip()


def main() -> int:
    network = NamespaceNetwork(2)
    try:
        before = delivered(network)
        network.cut([(0, 1)])
        cut = delivered(network)
        network.heal()
        healed = delivered(network)
    finally:
        network.close()
    print(f"before={before} cut={cut} healed={healed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
