"""``dsh batch TASKS.jsonl --out RESULTS.jsonl``: run many tasks on a Ray cluster.

The task file is read and checked whole first (:func:`~dsh.cli.fleet.tasks.read_tasks`:
a bad line fails the command with its line number, status 2, before Ray starts).
Then Ray: ``--ray-address ADDR`` joins an existing cluster; without it a local
cluster of ``--workers`` worker processes is started for the run and stopped after
it. ``--workers`` actors (one CPU each) each host up to ``--agents-per-worker``
agents at once on one booted tree (:mod:`dsh.cli.fleet`), writing their sessions to
the command's store (``--store``: PostgreSQL for several hosts, or JSONL on a path
every worker shares). RESULTS.jsonl gets one line per task as it finishes; progress
and worker notices go to stderr.

Exit status: 0 when every task's turn completed, 1 when any did not (its line says
why), 2 for a bad task file or usage. Ray is the ``dsh[ray]`` extra, imported here only.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any

from dsh.cli.boot import logging_to_stderr
from dsh.cli.errors import CliError, report
from dsh.cli.fleet.progress import BatchProgress, failed
from dsh.cli.fleet.scheduler import run_fleet
from dsh.cli.fleet.tasks import TaskResult, read_tasks, result_line
from dsh.cli.fleet.worker import FleetWorker
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings

NO_RAY_HELP = "dsh batch runs on Ray, which is not installed: pip install 'dsh[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:
        raise CliError(NO_RAY_HELP, 2) from error
    return ray


def start_ray(address: str | None, workers: int) -> Any:
    """Join the cluster at ``address``, else start a local one with ``workers`` CPUs; the ``ray`` module."""
    ray = _ray()
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "include_dashboard": False}
    try:
        if address is not None:
            ray.init(address=address, **quiet)
        else:
            ray.init(address="local", num_cpus=workers, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = f"the Ray cluster at {address}" if address is not None else "a local Ray cluster"
        raise CliError(f"cannot start {where}: {error}; check --ray-address (ray status shows it)") from error
    return ray


def provider_environ(settings: Settings) -> dict[str, str]:
    """The variables the workers' model adapter reads (its key and base URL), as this process has them."""
    names = (settings.key_env, settings.base_url_env)
    return {name: os.environ[name] for name in names if os.environ.get(name)}


async def run_batch(
    tree: Tree, settings: Settings, args: argparse.Namespace, tasks_file: Path, out: Path
) -> list[TaskResult]:
    """Run the task file on the cluster; write and return the results (in the order they finished)."""
    tasks = read_tasks(tasks_file)
    try:
        results_file = out.open("wb")
    except OSError as error:
        raise CliError(f"cannot write the results file {out}: {error.strerror or error}", 2) from error
    with results_file:
        ray = start_ray(args.ray_address, args.workers)
        try:
            actor = ray.remote(FleetWorker).options(num_cpus=1, max_concurrency=args.agents_per_worker, max_restarts=0)
            environ = provider_environ(settings)

            def new_worker() -> Any:
                return actor.remote(tree, environ, system_prompt=settings.system_prompt)

            def on_result(result: TaskResult) -> None:
                results_file.write(result_line(result))
                results_file.flush()
                progress.result(result)

            with BatchProgress(len(tasks), sys.stderr) as progress:
                return await run_fleet(
                    tasks,
                    new_worker=new_worker,
                    workers=args.workers,
                    per_worker=args.agents_per_worker,
                    on_result=on_result,
                    on_worker=progress.worker,
                    on_death=progress.death,
                )
        finally:
            ray.shutdown()


def _paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The task file and the results file, absolute."""
    return Path(args.tasks).absolute(), Path(args.out).absolute()


async def command(args: argparse.Namespace) -> int:
    """The ``batch`` subcommand."""
    try:
        settings = Settings.from_args(args)
        tree = resolve_tree(settings, writes=True)
        with logging_to_stderr(settings.verbose, debug=settings.debug):
            results = await run_batch(tree, settings, args, *_paths(args))
        bad = sum(failed(result) for result in results)
        if bad:
            print(f"dsh: {bad} of {len(results)} task(s) did not complete; see {args.out}", file=sys.stderr)
        return 1 if bad else 0
    except CliError as error:
        return report(error)
