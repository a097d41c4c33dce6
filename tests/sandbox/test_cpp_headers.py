"""C++ with the precompiled header force-included: any mix of standard headers builds at
its cost, and a program it breaks is built again as before.

`Cpp.forced_header` decides from the source alone which builds get `-include` and of
which header (the table below); the sandbox tests build in a zygote with the service's
precompiled headers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.toolchains import Cpp, Found, build_pch, discover
from reward_service.sandbox.zygote_client import ZygoteSandbox
from reward_service.scorers.code.settings import DEFAULT_PCH_DIR, DEFAULT_TOOLCHAIN_PATH

CPP = discover(DEFAULT_TOOLCHAIN_PATH, ["cpp"])["cpp"]
LIMITS = Limits(time_s=5.0, memory_mb=256, output_bytes=1 << 16)
MIX = "#include <iostream>\n#include <vector>\n#include <algorithm>\nusing namespace std;\n"


BITS, LIGHT, CONTEST = "bits/stdc++.h", "contest-light.h", "contest.h"


@pytest.mark.parametrize(
    ("source", "forced"),
    [
        (MIX, LIGHT),
        ("#include<map>\n#include<set>\n#include <stdio.h>\n", LIGHT),
        ("  #  include <string>\n#include <sstream>\n#define ll long long\n", LIGHT),
        ("#include <iostream>\n#include <iomanip>\n", CONTEST),
        ("#include <vector>\n#include <random>\n#include <chrono>\n", CONTEST),
        ("#include <memory>\n#include <map>\n", CONTEST),
        ("#include <bits/stdc++.h>\n", BITS),
        ("#include <vector>\n#include <optional>\n", BITS),
        ("#include <vector>\n#include <map>\n#include <ext/pb_ds/assoc_container.hpp>\n", BITS),
        ("#include <cstdio>\n", None),
        ("#include <cstdio>\n#include <cstring>\n#include <cmath>\n", None),
        ("#include <vector>\n", None),
        ("#include <stdio.h>\n#include <math.h>\n", None),
        ("int main() { return 0; }\n", None),
        ("#define _GLIBCXX_DEBUG\n#include <vector>\n#include <map>\n", None),
        ("#include <vector>\n#undef assert\n#include <map>\n", None),
        ('#include <vector>\n#include <map>\n#include "mine.h"\n', None),
    ],
)
def test_a_header_is_forced_where_it_pays_and_changes_no_macro(
    source: str, forced: str | None
) -> None:
    """Two C++ library headers or `bits/stdc++.h`, no header of the program's own, no macro
    defined before its standard includes: only then is a precompiled header forced, the
    smallest contest one that holds every header the program names (the light one without
    `toolchains.HEAVY_CONTEST_HEADERS`)."""
    assert Cpp.forced_header(memoryview(source.encode())) == forced


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    if not isinstance(CPP, Found):
        pytest.skip(f"cpp: {CPP}")
    build_pch(DEFAULT_PCH_DIR, CPP)  # what start-up does; kept when already there
    with ZygoteSandbox(
        toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["cpp"], pch_dir=DEFAULT_PCH_DIR
    ) as running:
        yield running


def run(sandbox: ZygoteSandbox, source: str) -> tuple[Kind, str, str]:
    (outcome,) = sandbox.execute(Program("cpp", source), [b"3 1 2\n"], LIMITS, 60).outcomes()
    return outcome.kind, outcome.stdout.decode(), outcome.stderr


def test_a_header_mix_builds_and_runs(sandbox: ZygoteSandbox) -> None:
    """A contest program listing its headers builds (forced header) and answers right."""
    source = MIX + "int main() { vector<int> v(3); for (auto &x : v) cin >> x;\n"
    source += "  sort(v.begin(), v.end()); cout << v[0] << v[1] << v[2] << '\\n'; }\n"
    assert run(sandbox, source)[:2] == (Kind.OK, "123\n")


def test_a_name_the_forced_headers_clash_with_is_built_again_without_them(
    sandbox: ZygoteSandbox,
) -> None:
    """`y1` is `<cmath>`'s Bessel function: a global of that name does not build with every
    header included, and the program, right without them, is built again and runs."""
    source = MIX + "int y1 = 7;\nint main() { cout << y1 << '\\n'; }\n"
    assert run(sandbox, source)[:2] == (Kind.OK, "7\n")


def test_a_program_that_does_not_build_answers_the_plain_builds_message(
    sandbox: ZygoteSandbox,
) -> None:
    """A compile error is the compiler's, from the build without the forced header."""
    kind, _, message = run(sandbox, MIX + "int main() { undeclared_name(); }\n")
    assert kind is Kind.COMPILE_ERROR
    assert "undeclared_name" in message
    assert "stdc++.h.gch" not in message


def test_a_heavy_contest_header_builds_with_the_whole_contest_header(
    sandbox: ZygoteSandbox,
) -> None:
    """`<iomanip>` is not in the light contest header: the program gets `contest.h`, and
    `setprecision` is there."""
    source = MIX + "#include <iomanip>\nint main() { cout << fixed << setprecision(2) << 0.5; }\n"
    assert Cpp.forced_header(memoryview(source.encode())) == CONTEST
    assert run(sandbox, source)[:2] == (Kind.OK, "0.50")


def test_a_header_beyond_the_contest_ones_builds_with_the_whole_library(
    sandbox: ZygoteSandbox,
) -> None:
    """`<optional>` is not among the contest headers: the program gets `bits/stdc++.h`'s."""
    source = MIX + "#include <optional>\nint main() { optional<int> o = 312; cout << *o; }\n"
    assert run(sandbox, source)[:2] == (Kind.OK, "312")
