"""``splice serve``: the pipeline's steps as long-running streaming queries
(runtime/serve.py), with progress on the screen, until SIGTERM or Ctrl-C."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

from engine.io import StepIO
from engine.session import start_session
from engine.settings import SpliceSettings
from runtime.planner import planned
from runtime.serve import ServeOptions, serve
from sql.plan import Pipeline


def serve_and_report(pipeline: Pipeline, settings: SpliceSettings, interval_s: float | None,
                     report_every_s: float | None) -> int:
    """Serve ``pipeline`` until SIGTERM or Ctrl-C, printing each step's
    progress; ``interval_s`` and ``report_every_s`` None: ServeOptions'
    defaults."""
    given = {"interval_s": interval_s, "report_every_s": report_every_s}
    options = ServeOptions(**{k: v for k, v in given.items() if v is not None})
    settings = settings.with_packages(planned(pipeline).packages())
    print(f"starting Spark ({settings.describe_spark()}) ...", flush=True)
    spark = start_session(settings)
    io = StepIO(spark=spark, warehouse=settings.warehouse_layout(), pipeline=pipeline,
                kafka_bootstrap=settings.kafka_bootstrap,
                kafka_lost_records=settings.kafka_lost_records)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        print(f"\n{signal.Signals(signum).name}: stopping every query ...", flush=True)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}

    def report(lines: list[str]) -> None:
        print(time.strftime("%H:%M:%S"), flush=True)
        for line in lines:
            print(f"  {line}", flush=True)

    def started() -> None:
        print(f"serving '{pipeline.name}': every step's query triggers every "
              f"{options.interval_s:g} s (Ctrl-C or SIGTERM stops them)", flush=True)

    try:
        served = serve(pipeline, io, stop, on_report=report, on_started=started,
                       options=options)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("stopped; what each step read while serving:")
    report([s.line() for s in served])
    failed = [s for s in served if s.failures]
    if failed:
        print(f"splice: {len(failed)} step(s) failed while serving (restarted each time)",
              file=sys.stderr)
        return 1
    return 0
