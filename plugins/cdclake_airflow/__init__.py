"""Airflow pieces of cdclake: the operator that runs a cdclake Spark job for a data interval."""
