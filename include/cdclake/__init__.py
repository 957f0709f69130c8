"""cdclake: hourly CDC lakehouse on Airflow, Spark, Iceberg and Great Expectations."""
