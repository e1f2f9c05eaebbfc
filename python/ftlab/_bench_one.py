"""One `ftlab bench` case in its own process: `python -m ftlab._bench_one '<case JSON>'`.

Prints the core's benchmark result as JSON; the peak resident memory is this process's.
"""

from __future__ import annotations

import json
import sys

from ftlab import _core
from ftlab._scheme import load_entry_points


def main() -> None:
    case = json.loads(sys.argv[1])
    try:
        load_entry_points()  # Python schemes of plugins (FTLAB_PLUGINS, entry points)
        text = _core.bench(
            case["ftl"],
            trace=case.get("trace"),
            workload=case.get("builtin"),
            preset=case.get("preset"),
            sets=case.get("sets", []),
        )
    except _core.FtlabError as e:
        print(f"{case['ftl']}: {e}", file=sys.stderr)
        sys.exit(2)
    print(text)


if __name__ == "__main__":
    main()
