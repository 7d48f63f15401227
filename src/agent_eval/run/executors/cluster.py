"""What the driver decides about a Ray cluster before any attempt: which nodes take
slots, how many each, and whether they can reach the model endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_eval.errors import ConfigError
from agent_eval.web import is_loopback


@dataclass(frozen=True)
class Node:
    """A live node that offers CPUs (a head started with --num-cpus 0 takes no slots)."""

    node_id: str
    address: str
    cpus: float


def cluster_nodes() -> list[Node]:
    """The connected cluster's live nodes with CPUs, and whether each is this machine."""
    import ray

    nodes = [
        Node(n["NodeID"], n["NodeManagerAddress"], float(n["Resources"].get("CPU", 0)))
        for n in ray.nodes()  # type: ignore[no-untyped-call]
        if n["Alive"]
    ]
    working = [n for n in nodes if n.cpus > 0]
    if not working:
        raise ConfigError("the Ray cluster has no live node with CPUs; add a worker node")
    return working


def split_slots(concurrency: int, nodes: list[Node]) -> dict[str, int]:
    """``concurrency`` slots shared by the nodes in proportion to their CPUs (largest
    remainder, ties to the earlier node); a node whose share rounds to 0 gets no group."""
    total = sum(n.cpus for n in nodes)
    exact = [concurrency * n.cpus / total for n in nodes]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(nodes)), key=lambda i: (shares[i] - exact[i], i))
    for i in by_remainder[: concurrency - sum(shares)]:
        shares[i] += 1
    return {n.node_id: s for n, s in zip(nodes, shares, strict=True) if s}


def this_machine() -> str:
    """This machine's address as Ray sees it."""
    import ray.util

    return str(ray.util.get_node_ip_address())  # type: ignore[no-untyped-call]


def all_here(nodes: list[Node], here: str) -> bool:
    """Whether every node is this machine, so the nodes see this machine's files."""
    return all(n.address == here or is_loopback(n.address) for n in nodes)


def refuse_unreachable(base_url: str, nodes: list[Node], here: str) -> None:
    """A loopback --base-url is this machine only: refuse it when a node is elsewhere."""
    host = urlsplit(base_url).hostname or ""
    if not is_loopback(host):
        return
    elsewhere = sorted(
        {n.address for n in nodes if n.address != here and not is_loopback(n.address)}
    )
    if elsewhere:
        raise ConfigError(
            f"--base-url {base_url}: a loopback address, which the Ray nodes on "
            f"{', '.join(elsewhere[:3])} cannot reach; give the endpoint's address on the "
            f"cluster's network, e.g. http://{here}:PORT/v1"
        )
