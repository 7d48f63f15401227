"""How the driver shares slots among nodes and guards the model endpoint's reachability."""

from __future__ import annotations

import pytest

from agent_eval.errors import ConfigError
from agent_eval.run.executors.cluster import Node, refuse_unreachable, split_slots


def nodes(*cpus: float) -> list[Node]:
    return [Node(f"n{i}", f"10.0.0.{i + 1}", c) for i, c in enumerate(cpus)]


@pytest.mark.parametrize(
    ("concurrency", "cpus", "shares"),
    [
        (64, (1, 1, 1), {"n0": 22, "n1": 21, "n2": 21}),
        (3, (1, 1, 1), {"n0": 1, "n1": 1, "n2": 1}),
        (2, (1, 1, 1), {"n0": 1, "n1": 1}),  # a node whose share rounds to 0 gets no group
        (10, (8, 2), {"n0": 8, "n1": 2}),
        (1, (0.5, 4), {"n1": 1}),
        (5, (2,), {"n0": 5}),
    ],
)
def test_slots_follow_the_nodes_cpus_and_add_up_to_the_concurrency(
    concurrency: int, cpus: tuple[float, ...], shares: dict[str, int]
) -> None:
    assert split_slots(concurrency, nodes(*cpus)) == shares
    assert sum(shares.values()) == concurrency


ELSEWHERE = [Node("a", "10.0.0.5", 4), Node("b", "10.0.0.6", 4)]
HERE = [Node("a", "10.0.0.5", 4), Node("b", "127.0.0.1", 4)]


@pytest.mark.parametrize(
    ("base_url", "cluster", "refused"),
    [
        ("http://127.0.0.1:4000/v1", ELSEWHERE, True),
        ("http://localhost:4000/v1", ELSEWHERE, True),
        ("http://[::1]:4000/v1", ELSEWHERE, True),
        ("http://127.0.0.2:4000/v1", ELSEWHERE, True),
        ("http://LOCALHOST:4000/v1", ELSEWHERE, True),
        ("http://[::ffff:127.0.0.1]:4000/v1", ELSEWHERE, True),
        ("http://[::ffff:10.0.0.5]:4000/v1", ELSEWHERE, False),
        ("http://10.0.0.5:4000/v1", ELSEWHERE, False),  # a real address: reachable
        ("https://api.example.com/v1", ELSEWHERE, False),
        ("http://127.0.0.1:4000/v1", HERE, False),  # every node is this machine
        ("http://127.0.0.1:4000/v1", [Node("a", "10.0.0.5", 4), Node("b", "::1", 4)], False),
        ("http://127.0.0.1:4000/v1", [Node("a", "10.0.0.5", 4)], False),
    ],
)
def test_a_loopback_endpoint_is_refused_only_when_some_node_is_elsewhere(
    base_url: str, cluster: list[Node], refused: bool
) -> None:
    if refused:
        with pytest.raises(
            ConfigError, match=r"loopback address, which the Ray nodes on 10\.0\.0\.6"
        ):
            refuse_unreachable(base_url, cluster, here="10.0.0.5")
    else:
        refuse_unreachable(base_url, cluster, here="10.0.0.5")
