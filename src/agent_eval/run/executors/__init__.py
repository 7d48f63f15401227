"""Where attempts run: the executors behind one protocol (protocol.py).

``local`` forks worker processes on this machine from a zygote (local.py, pool.py,
worker.py, zygote.py, sandboxed.py); ``ray`` places slot groups on a Ray cluster (ray.py,
ray_slots.py, travel.py, cluster.py). agent_host.py is the agent's own process: it imports
nothing of the parent's side.
"""
