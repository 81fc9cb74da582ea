"""The physical plan: a node per step (what it reads, how it explains
itself), the one registry of node kinds (``kinds``), the planner and
EXPLAIN. Pure: nothing here needs Spark; the executors that run the nodes
are in ``splice.joins`` and ``splice.operators``, bound to the nodes by
``splice.runtime.executors``."""
