"""The cdclake page in the Airflow UI: its FastAPI app (``cdclake_airflow.ui``) served by Airflow's
API server under ``/cdclake``, and a "cdclake" entry in the UI's navigation that shows it."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from cdclake_airflow.ui import app


class CdclakeUiPlugin(AirflowPlugin):
    name = "cdclake"
    fastapi_apps = [{"app": app, "url_prefix": "/cdclake", "name": "cdclake"}]
    external_views = [{
        "name": "cdclake",
        # Relative to the UI's base URL (no leading slash), so a base path prefix still works.
        "href": "cdclake/",
        "url_route": "cdclake",
        "destination": "nav",
    }]
