"""``dsh batch``: fleets of agents on a Ray cluster.

:mod:`~dsh.cli.fleet.tasks` reads the task file and holds the result values,
:mod:`~dsh.cli.fleet.worker` is the Ray actor hosting many agents on one kernel,
:mod:`~dsh.cli.fleet.scheduler` spreads the jobs over the actors and resumes a dead
one's tasks elsewhere, :mod:`~dsh.cli.fleet.progress` reports on stderr. Ray itself
is imported only when ``dsh batch`` runs (the ``dsh[ray]`` extra), never by ``import dsh``.
"""
