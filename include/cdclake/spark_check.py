"""Whether a Spark Connect server may be used, and starting the state folder's own when needed.

Before a client uses the state folder's own address (``sc://127.0.0.1:<port>``) it checks
(:func:`check_server`) that the server answers (:func:`probe`: one Config call, which also reads
what the server recorded of itself in its conf), still has its scratch space and was started for
this state folder or one that holds it; a server given on purpose (``CDCLAKE_SPARK_REMOTE``, a
cluster's, shared by design) is only checked for answering. :func:`ensure_running` starts the
state folder's own server when nothing listens there and restarts it when it is dead.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cdclake.exceptions import SparkServerError
from cdclake.spark_server import (
    HOME_CONF,
    SCRATCH_CONF,
    ServerPaths,
    check_reachable,
    local_remote,
    local_server,
    port_open,
    recorded_port,
    remote_address,
    running_pid,
    scratch_pid,
    server_paths,
    start,
    stop,
)

if TYPE_CHECKING:
    from cdclake.config import PipelineConfig

# How long a listening server may take to answer one Config call before it counts as dead: a
# busy driver answers within milliseconds, a full GC pause within seconds.
PROBE_TIMEOUT_S = 20.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
_NO_ANSWER = "does not answer a Spark Connect call"


class ServerNotUsable(SparkServerError):
    """A server listens at the address but must not be used: it does not answer, lost its scratch
    space, or was started for another state folder. ``restartable``: it is this state folder's
    own, and ``cdclake run`` may restart it. ``lasting``: it stays so until someone acts (not a
    server that does not answer: it may be restarting)."""

    def __init__(self, message: str, restartable: bool = False, info: ServerInfo | None = None,
                 lasting: bool = True) -> None:
        super().__init__(message)
        self.restartable = restartable
        self.info = info  # what is known of it (cdclake spark status shows it)
        self.lasting = lasting


@dataclass(frozen=True)
class ServerInfo:
    """What a listening server says of itself (its Spark conf), and its PID when found here."""

    remote: str
    home: Path | None  # the state folder that started it; None: not started by cdclake spark start
    scratch: Path | None
    local_dirs: tuple[Path, ...]
    pid: int | None

    @property
    def shown(self) -> str:
        return shown_remote(self.remote)


def shown_remote(remote: str) -> str:
    """A server's address as a message shows it: without its parameters (they may carry a token)."""
    return remote.split(";", 1)[0].rstrip("/")


def probe(remote: str, timeout: float | None = None) -> ServerInfo:
    """Ask the server at ``remote`` what it is: one Config call (and the release of its session),
    bounded by ``timeout`` (:data:`PROBE_TIMEOUT_S`) where a Connect client would retry for
    minutes. Raises :class:`ServerNotUsable` when it does not answer."""
    import uuid

    import grpc  # type: ignore[import-untyped]
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.proto import base_pb2, base_pb2_grpc

    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    builder = DefaultChannelBuilder(remote)
    session_id = str(uuid.uuid4())
    request = base_pb2.ConfigRequest(session_id=session_id, client_type="cdclake-probe")
    if builder.userId:
        request.user_context.user_id = builder.userId
    request.operation.get_option.keys.extend([HOME_CONF, SCRATCH_CONF, "spark.local.dir"])
    channel = builder.toChannel()
    try:
        stub = base_pb2_grpc.SparkConnectServiceStub(channel)
        response = stub.Config(request, metadata=builder.metadata(), timeout=timeout)
        release = base_pb2.ReleaseSessionRequest(session_id=session_id, client_type="cdclake-probe")
        release.user_context.CopyFrom(request.user_context)
        try:
            stub.ReleaseSession(release, metadata=builder.metadata(), timeout=timeout)
        except grpc.RpcError:
            pass  # the server releases it after its idle timeout anyway
    except grpc.RpcError as exc:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        why = "" if code in (None, grpc.StatusCode.DEADLINE_EXCEEDED) else f" ({code.name})"
        raise ServerNotUsable(f"the Spark Connect server at {shown_remote(remote)} {_NO_ANSWER} within "
                              f"{timeout:.0f} s{why}", lasting=False) from None
    finally:
        channel.close()
    values = {pair.key: pair.value for pair in response.pairs if pair.HasField("value")}
    scratch = Path(values[SCRATCH_CONF]) if values.get(SCRATCH_CONF) else None
    return ServerInfo(
        remote=remote,
        home=Path(values[HOME_CONF]) if values.get(HOME_CONF) else None,
        scratch=scratch,
        local_dirs=tuple(Path(d) for d in values.get("spark.local.dir", "").split(",") if d.strip()),
        pid=scratch_pid(scratch) if scratch else None,
    )


def is_own_address(config: PipelineConfig, remote: str) -> bool:
    """True when ``remote`` is the state folder's own server (``sc://127.0.0.1:<spark port>``),
    which must have been started for it; False for a server given on purpose
    (``CDCLAKE_SPARK_REMOTE`` or ``spark.remote``: shared by design, checked for health only)."""
    if os.environ.get("CDCLAKE_SPARK_REMOTE") or config.spark_remote != local_remote(config.spark_port):
        return False
    host, port = remote_address(remote)
    return host in LOOPBACK_HOSTS and port == config.spark_port


def serves(owner: Path, home: Path) -> bool:
    """A server serves the state folder that started it and the ones inside it (they cannot
    outlive it: the test suite's pipelines, each in a folder of the test run's)."""
    return owner == home or owner in home.parents


def _scratch_lost(info: ServerInfo) -> Path | None:
    """The first of the server's scratch folders that is gone, or lost Spark's block manager
    folder (what every shuffle writes into); None when all are there."""
    for folder in info.local_dirs:
        try:
            if not any(entry.name.startswith("blockmgr-") for entry in folder.iterdir()):
                return folder
        except OSError:
            return folder
    return None


def check_server(config: PipelineConfig | None, remote: str | None = None,
                 timeout: float | None = None) -> ServerInfo:
    """Before a client uses the server at ``remote`` (default: ``config``'s): it listens
    (:func:`check_reachable`) and answers (:func:`probe`); at the state folder's own address it
    also still has its scratch space and was started for this state folder or one that holds it.
    Fails at once with :class:`ServerNotUsable`, naming its PID, the state folder that started it
    and what to do. One Config call: it runs once per task, command and session."""
    if remote is None:
        if config is None:
            raise ValueError("check_server needs a configuration or a remote")
        remote = config.spark_remote
    check_reachable(remote)
    own = config is not None and is_own_address(config, remote)
    timeout = PROBE_TIMEOUT_S if timeout is None else timeout
    try:
        info = probe(remote, timeout)
    except ServerNotUsable:
        if config is None or not own:
            raise
        # It cannot say whose it is: its scratch folder's PID file (or ours) may.
        found = local_server(remote_address(remote)[1])
        silent = ServerInfo(remote, found.home if found else None, found.scratch if found else None, (),
                            found.pid if found else None)
        raise _not_usable(config, silent, f"{_NO_ANSWER} within {timeout:.0f} s", lasting=False) from None
    if config is not None and own:
        check_owned(config, info)
    return info


def check_owned(config: PipelineConfig, info: ServerInfo) -> None:
    """The checks of a server at the state folder's own address, on what it said (:func:`probe`):
    started for this state folder or one that holds it, its scratch space still there."""
    home = Path(config.home)
    mine = _owned_by_pid_file(config, info.remote)
    if info.home is None and mine is None:
        raise _not_usable(config, info, "was not started by `cdclake spark start` (it names no state folder)")
    if info.home is not None and not serves(info.home, home):
        gone = "" if info.home.exists() else ", which no longer exists"
        raise _not_usable(config, info, f"was started for another state folder, {info.home}{gone}, "
                                        f"not for this one ({home})")
    lost = _scratch_lost(info)
    if lost is not None:
        raise _not_usable(config, info, f"lost its scratch space {lost} (deleted), where its jobs write")


def _owned_by_pid_file(config: PipelineConfig, remote: str) -> int | None:
    """This state folder's running server's PID, when it listens on ``remote``'s port."""
    paths = server_paths(config.home)
    pid = running_pid(paths)
    return pid if pid is not None and recorded_port(paths) == remote_address(remote)[1] else None


def _not_usable(config: PipelineConfig, info: ServerInfo, problem: str,
                lasting: bool = True) -> ServerNotUsable:
    """The error for a server at the state folder's own address that must not be used: what it
    is (PID, the state folder that started it), what is wrong, and what to do."""
    home = Path(config.home)
    mine = _owned_by_pid_file(config, info.remote)
    pid = info.pid or mine
    if pid is None and info.home is not None:
        pid = running_pid(ServerPaths(info.home / "spark"))  # not server_paths: it would create it
    owner = info.home if info.home is not None else (home if mine is not None else None)
    what = f"the Spark Connect server at {info.shown}" + (f" (pid {pid})" if pid else "")
    elsewhere = ("or start this state folder's own on another port (`cdclake spark start --port P`, "
                 "or CDCLAKE_SPARK_PORT=P)")
    restartable = owner == home and mine is not None
    if restartable:
        todo = ("restart it: `cdclake spark stop`, then `cdclake spark start` "
                "(`cdclake run` restarts it itself)")
    elif owner is not None and owner.exists():
        todo = (f"stop it from its state folder (`CDCLAKE_HOME={shlex.quote(str(owner))} "
                f"cdclake spark stop`) {elsewhere}")
        if owner != home and not serves(owner, home):
            todo += f"; to share it on purpose, set CDCLAKE_SPARK_REMOTE={info.shown}"
    elif owner is not None:
        todo = ("`cdclake spark stop` here stops it (its state folder is gone); then `cdclake spark start` "
                "(or `cdclake run`) starts this state folder's own")
    else:
        todo = (f"stop it{f' (kill {pid})' if pid else ''} {elsewhere}; to use it on purpose, set "
                f"CDCLAKE_SPARK_REMOTE={info.shown}")
    return ServerNotUsable(f"{what} {problem}: {todo}", restartable=restartable, info=replace(info, pid=pid),
                           lasting=lasting)


def ensure_running(config: PipelineConfig) -> str:
    """The configured server's URL, after starting one for ``config``'s state folder when nothing
    listens there (``cdclake run``, ``demo``, ``airflow start``), or restarting this state folder's
    own when it is dead (:func:`check_server`). A remote set elsewhere (``CDCLAKE_SPARK_REMOTE``)
    is only checked. A server serves its own state folder and the ones inside it; each session
    brings its catalog."""
    host, port = remote_address(config.spark_remote)
    if not port_open(host, port):
        if not is_own_address(config, config.spark_remote):
            check_reachable(config.spark_remote)
        return start(config)
    try:
        check_server(config)
    except ServerNotUsable as exc:
        if not exc.restartable:
            raise
        stop(config.home)
        return start(config, port)
    return config.spark_remote
