"""Sweeps on a Dask distributed cluster (`ftlab sweep --scheduler ADDRESS`).

Each run is one Dask task (the sweep's `execute`, keyed by its run key; this module does not
import the sweep, which hands it the function); a worker runs it in
the core with the GIL released and sends back its row, which this process writes to the
table as for a local sweep. Workers need ftlab installed (the same version: checked before
anything runs). Traces are read by path, so the workers must see them at the same absolute
path (a shared file system), or be shipped to them once per worker (`ship_traces`): a
worker plugin writes each trace into the worker's local directory, also on workers that
join later.

Needs the `cluster` extra: `pip install 'ftlab[cluster]'` (dask[distributed]).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Protocol, TypeVar

from ftlab import _core
from ftlab._core import FtlabError


class ClusterTask(Protocol):
    """What the cluster needs of a sweep's task: its run key (the Dask key), its options
    (the trace to ship) and where its shipped trace is."""

    run_key: str
    options: dict[str, Any]
    shipped: str | None


TaskT = TypeVar("TaskT", bound=ClusterTask)
OutcomeT = TypeVar("OutcomeT")

#: Seconds to wait for the scheduler, and for a first worker.
CONNECT_TIMEOUT = 30
SHIPPED_DIR = "ftlab-traces"


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise FtlabError(
            "--scheduler needs Dask distributed: pip install 'ftlab[cluster]' "
            "(or pip install 'dask[distributed]')"
        ) from None
    return distributed


def worker_version() -> str:
    """Run on each worker: the ftlab version it has."""
    return _core.__version__


def shipped_path(name: str) -> str:
    """On a worker: where the trace shipped as `name` was written."""
    from distributed import get_worker

    return str(Path(get_worker().local_directory) / SHIPPED_DIR / name)


def _ship_plugin(path: str) -> tuple[str, Any]:
    """A worker plugin that writes the trace at `path` into each worker's directory, and
    the name it is shipped under (`DIGEST/FILE`)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = f"{digest}/{Path(path).name}"

    class ShipTrace(WorkerPlugin):
        def __init__(self) -> None:
            self.name = name
            self.data = data

        def setup(self, worker: Any) -> None:
            target = Path(worker.local_directory) / SHIPPED_DIR / self.name
            if target.is_file() and target.stat().st_size == len(self.data):
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(target.name + f".{os.getpid()}.tmp")
            temporary.write_bytes(self.data)
            os.replace(temporary, target)

    return name, ShipTrace()


def run(
    tasks: list[TaskT],
    execute: Callable[[TaskT], OutcomeT],
    address: str,
    ship_traces: bool,
    record: Callable[[OutcomeT], None],
) -> None:
    """Runs `execute` on each task on the cluster at `address`, recording each outcome as
    it arrives."""
    distributed = _distributed()
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        raise FtlabError(f"cannot connect to the Dask scheduler at {address}: {e}") from None
    futures: list[Any] = []
    try:
        if not tasks:
            return
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            raise FtlabError(f"the Dask cluster at {address} has no worker: {e}") from None
        try:
            versions = client.run(worker_version)
        except Exception as e:  # a worker without ftlab fails to unpickle the function
            raise FtlabError(
                f"the Dask workers at {address} cannot run ftlab (install it on every worker): {e}"
            ) from None
        wrong = {w: v for w, v in versions.items() if v != _core.__version__}
        if wrong:
            listed = ", ".join(f"{w} has {v}" for w, v in sorted(wrong.items()))
            raise FtlabError(
                f"the Dask workers must run ftlab {_core.__version__} as here: {listed}"
            )
        if ship_traces:
            shipped: dict[str, str] = {}
            for task in tasks:
                trace = task.options["trace"]
                if trace is not None and trace not in shipped:
                    name, plugin = _ship_plugin(trace)
                    client.register_plugin(plugin, name=f"ftlab-trace-{name}")
                    shipped[trace] = name
                if trace is not None:
                    task.shipped = shipped[trace]
        futures = [
            client.submit(execute, task, key=f"ftlab-run-{task.run_key}", pure=False)
            for task in tasks
        ]
        for future in distributed.as_completed(futures):
            try:
                outcome: OutcomeT = future.result()
            except Exception as e:
                raise FtlabError(f"a run failed on the Dask cluster ({future.key}): {e}") from None
            record(outcome)
            future.release()
    except BaseException:
        if futures:
            client.cancel(futures)
        raise
    finally:
        client.close()
