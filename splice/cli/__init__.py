"""The ``splice`` command: validate, explain, run, serve, maintain, show and
test pipelines, and the demo. One module a command, each with its parser
(``add_parser``) and its handler (``run``); ``main`` maps the errors every
command may meet to one line and an exit code."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from splice.cli import demo, explain, maintain, run, serve, show, test, validate
from splice.engine.definitions import DefinitionChanged
from splice.engine.fs import FileSystemUnavailable
from splice.engine.settings import SettingsError
from splice.runtime.claims import ClaimRefused
from splice.runtime.lock import LockBusy
from splice.runtime.maintenance import MaintenanceFailed
from splice.runtime.step_run import StepFailed
from splice.runtime.tenure import TenureLost
from splice.sql.errors import SqlErrors

# In the order --help lists them.
COMMANDS = (validate, explain, run, serve, maintain, show, test, demo)
# Commands that only read SQL: a closed pipe (`splice explain ... | head`)
# ends them quietly.
_TEXT_ONLY = ("validate", "explain")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="splice", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command in _TEXT_ONLY and threading.current_thread() is threading.main_thread():
        # only here: a process with sockets to Spark must see EPIPE, not die
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.command not in _TEXT_ONLY and args.command != "maintain":
        from splice.engine.errors import quiet_spark_error_logs

        quiet_spark_error_logs()
    try:
        return args.handler(args)
    except SqlErrors as err:
        for e in err.errors:
            print(e.render(), file=sys.stderr)
        return 1
    except (ClaimRefused, TenureLost, StepFailed, DefinitionChanged, LockBusy,
            MaintenanceFailed) as err:
        # run, serve and maintain word these themselves; any other command
        # that runs steps (demo) ends here, with the same one paragraph
        print(f"splice: {err}", file=sys.stderr)
        return 1
    except FileNotFoundError as err:
        # the OS's own error names the file (a case, a pipeline to maintain)
        what = f"{err.filename}: no such file or folder" if err.filename else err
        print(f"splice: {what}", file=sys.stderr)
        return 2
    except (SettingsError, FileSystemUnavailable) as err:
        print(f"splice: {err}", file=sys.stderr)
        return 2
