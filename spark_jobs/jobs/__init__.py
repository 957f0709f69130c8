"""The jobs' entry points, one module per step of the DAGs (``land``, ``normalize``, ``compact``,
``validate``, ``publish``, ``maintenance``): each a ``main(argv, spark)`` that parses the
arguments, opens (or takes) the session and calls its library module once. A DAG task calls
``main`` on its Spark Connect session (``cdclake_airflow.operators``); from a shell,
``python -m spark_jobs.jobs.<step> ...`` opens one on the configured server."""
