"""The cluster topology of ``docker-compose.yml`` run natively on one machine (``cdclake cluster``).

For machines without Docker, and for the ``cluster`` test tier: a Spark standalone master and
workers, the Spark Connect server as their driver, PostgreSQL (Iceberg JDBC catalog and Airflow's
metadata), an S3 endpoint for the ``s3a://`` warehouse, the Kafka broker and Airflow's components
on the LocalExecutor, each a process of its own bound to 127.0.0.1. They read the configuration
files compose mounts (``include/compose/...``). The product reaches them as the wheel built from
the checkout, installed into a virtual environment of the cluster's own: the workers' executors
never see the checkout. Run from a checkout only (it builds the wheel and reads include/compose).

:mod:`.layout` is where everything lives (ports, secrets, the clients' environment),
:mod:`.product` the wheel's environment, :mod:`.services` the processes and :mod:`.cli` the
``cdclake cluster up|down|status|env|exec`` command.
"""
