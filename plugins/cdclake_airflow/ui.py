"""The cdclake page of the Airflow UI: a FastAPI app that Airflow's API server serves under
``/cdclake`` (plugin ``plugins/cdclake_ui.py``), behind the same login as the rest of the UI.

Read-only: every endpoint reads the lakehouse through pyiceberg (``cdclake.hour_report``), never
starts a Spark job, and needs a logged-in user (the UI's session cookie or a bearer token).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

PAGE = Path(__file__).with_name("page.html")
# cdclake's modules are imported in the handlers: every Airflow process imports the plugins, only
# the API server serves the page.


def _authenticated() -> list[Any]:
    """The UI's own check: a valid login (JWT from the session cookie or a bearer header)."""
    from airflow.api_fastapi.core_api.security import requires_authenticated

    return [Depends(requires_authenticated())]


def _config() -> Any:
    from cdclake.config import load_config

    return load_config()


def _hour(text: str) -> dt.datetime:
    from cdclake.exceptions import CdclakeError
    from cdclake.hour_report import parse_hour

    try:
        return parse_hour(text)
    except CdclakeError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from None


def _json(value: Any) -> Response:
    # The standard library's encoder: FastAPI's jsonable_encoder walks every value in Python,
    # several times slower on a month of hours.
    return Response(json.dumps(value, default=str, separators=(",", ":")), media_type="application/json")


def create_app() -> FastAPI:
    app = FastAPI(title="cdclake", dependencies=_authenticated(), docs_url=None, redoc_url=None,
                  openapi_url=None)

    @app.get("/", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE.read_text(encoding="utf-8"))

    @app.get("/api/hours")
    async def hours(start: str | None = Query(None), end: str | None = Query(None)) -> Response:
        """Every hour of ``[start, end)`` (default: up to the newest hour landed, 30 days)."""
        from cdclake.catalog import open_catalog
        from cdclake.exceptions import CdclakeError
        from cdclake.hour_report import default_range, hour_text
        from cdclake.hour_report import hours as hour_rows
        from cdclake.run_cli import HOURLY_DAG_ID

        def read() -> dict[str, Any]:
            config = _config()
            last = _hour(end) if end else default_range(open_catalog(config))[1]
            first = _hour(start) if start else last - dt.timedelta(days=30)
            try:
                rows = hour_rows(config, first, last, ranges=False)  # an hour's own: api/hours/{hour}
            except CdclakeError as exc:
                raise HTTPException(status_code=422, detail=str(exc)) from None
            return {"start": hour_text(first), "end": hour_text(last), "dag_id": HOURLY_DAG_ID,
                    "hours": rows}

        return _json(await asyncio.to_thread(read))

    @app.get("/api/hours/{hour}")
    async def one_hour(hour: str) -> Response:
        """One hour, with the Data Docs pages of each of its gates."""
        from cdclake.hour_report import docs_pages
        from cdclake.hour_report import hours as hour_rows

        moment = _hour(hour)

        def read() -> dict[str, Any]:
            config = _config()
            rows = hour_rows(config, moment, moment + dt.timedelta(hours=1))
            if not rows:
                raise HTTPException(status_code=404, detail=f"nothing recorded for hour {hour}")
            row = rows[0]
            for stage, gate in row["gates"].items():
                gate["docs"] = [f"docs/{p}" for p in docs_pages(config, stage, moment, gate["run_id"])]
            return row

        return _json(await asyncio.to_thread(read))

    @app.get("/api/tables")
    async def tables() -> Response:
        from cdclake.hour_report import tables as table_rows

        return _json(await asyncio.to_thread(lambda: table_rows(_config())))

    @app.get("/gate-docs/{stage}/{hour}", response_model=None)
    async def gate_docs(stage: str, hour: str, run_id: str) -> RedirectResponse | HTMLResponse:
        """A gate run's Data Docs: its page, or a list when the gate validated several batches."""
        from cdclake.hour_report import docs_pages

        moment = _hour(hour)
        pages = await asyncio.to_thread(lambda: docs_pages(_config(), stage, moment, run_id))
        if not pages:
            raise HTTPException(status_code=404, detail="no Data Docs page for this gate run")
        if len(pages) == 1:
            return RedirectResponse(f"../../docs/{pages[0]}", status_code=303)
        items = "".join(f'<li><a href="../../docs/{p}">{html.escape(p.rsplit("/", 1)[-1])}</a></li>'
                        for p in pages)
        title = html.escape(f"{stage} gate, hour {hour}, run {run_id}")
        return HTMLResponse(f"<!doctype html><title>{title}</title><h1>{title}</h1><ul>{items}</ul>")

    @app.get("/docs/{path:path}")
    async def docs(path: str) -> FileResponse:
        """A Data Docs file (pages, their styles and scripts), only from inside the site."""
        from cdclake.hour_report import docs_file

        found = docs_file(_config(), path)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no Data Docs file {quote(path)}")
        return FileResponse(found)

    return app


app = create_app()
