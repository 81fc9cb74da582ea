"""The suite's shared helpers, imported by what they are: ``tests.helpers.pipeline``
(a pipeline's IO and rows), ``.crash_harness`` and ``.faults`` (runs killed and
stopped), ``.intervals``, ``.kafka``, ``.s3_server``, ``.tcp_forwarder``,
``.packages`` (file to dotted name), ``.schedule`` (the workers' order)."""
