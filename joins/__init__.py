"""The join executors: one join core (``core``) and a query per join variant
(lookup, interval, table-table, asof), each running its node of
``splice.physical.joins``."""
