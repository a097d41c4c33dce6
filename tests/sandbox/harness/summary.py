"""Table the hostile runs' reports: each program's end (and holes) under each profile.

`python -m tests.sandbox.harness.summary DIR` reads the `results-*.jsonl` files that
`test_hostile.py` left below DIR (its pytest `--basetemp`). A cell is the
kind the run ended with; `!` marks a hole (the reasons follow the table).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.sandbox.harness import confine
from tests.sandbox.harness.hostile_native import NATIVE
from tests.sandbox.harness.hostile_programs import PROGRAMS
from tests.sandbox.harness.hostile_scripts import SCRIPTS
from tests.sandbox.harness.platforms import PROFILES


def main(root: Path) -> None:
    table: dict[str, dict[str, dict[str, object]]] = {}
    layers: dict[str, object] = {}
    for profile in PROFILES:
        for results in sorted(root.glob(f"**/hostile-{profile}*/results-*.jsonl")):
            events = confine.read_report(results)
            layers.setdefault(profile, (events.get("layers") or [{}])[0].get("layers"))
            for event in events.get("program", []):
                table.setdefault(str(event["name"]), {}).setdefault(profile, event)
    width = max(len(p.name) for p in (*PROGRAMS, *NATIVE, *SCRIPTS)) + 2
    print("layers:", *(f"{profile}={layers.get(profile)}" for profile in PROFILES), sep="\n  ")
    print("".ljust(width) + "".join(profile[:16].ljust(17) for profile in PROFILES))
    holes = []
    for program in (*PROGRAMS, *NATIVE, *SCRIPTS):
        row = table.get(program.name, {})
        cells = []
        for profile in PROFILES:
            event = row.get(profile)
            if event is None:
                cells.append("-")
                continue
            mark = "!" if event["holes"] else ""
            cells.append(f"{event.get('kind', 'skipped')}{mark}")
            holes += [f"{program.name} [{profile}]: {hole}" for hole in event["holes"]]
        print(program.name.ljust(width) + "".join(cell.ljust(17) for cell in cells))
    print(*holes, sep="\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
