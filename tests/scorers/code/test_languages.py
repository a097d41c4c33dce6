"""Compiled languages through the `code` scorer: one generated task in each, and its failures.

Each language's program reads `mode a b`: mode 0 prints `a + b`, mode 1 spins,
mode 2 allocates without end. One source per language serves every case
(the sandbox builds it once and keeps it), so a language costs two builds:
that program and one that does not compile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reward_service.sandbox.toolchains import TOOLCHAINS, Found, discover
from reward_service.scorers.base import GradingLimits, Status
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.scorers.code.settings import CodeSettings, check_sandbox

SETTINGS = CodeSettings(build_time_s=30)
"""A build's 30 s: Scala's and Kotlin's compilers (3-4 s of CPU each on a quiet machine) pass
the default 10 s on a loaded one; the limit itself is tested with C++ (`test_run_code`)."""
FOUND = discover(SETTINGS.toolchain_path)
FENCES = {"cpp": "cpp", "java": "java", "go": "go", "javascript": "js", "rust": "rust", "c": "c"}
FENCES |= {"ruby": "ruby", "php": "php", "perl": "perl", "lua": "lua", "typescript": "ts", "R": "r"}
FENCES |= {"verilog": "verilog", "scala": "scala", "kotlin": "kotlin", "csharp": "csharp"}
FENCES |= {"d": "d", "racket": "racket"}
PROGRAMS = {
    "cpp": """\
#include <iostream>
#include <vector>
int main() {
    long long m, a, b;
    std::cin >> m >> a >> b;
    if (m == 1) { volatile long long x = 0; for (;;) x++; }
    if (m == 2) { std::vector<std::vector<char>> v; for (;;) v.emplace_back(1 << 20, 'x'); }
    std::cout << a + b << "\\n";
}
""",
    "java": """\
import java.util.*;
public class Sums {
    static long spin() { long k = 0; while (k >= 0) k += 1 - (k >> 62); return k; }
    static int hog() { List<long[]> l = new ArrayList<>(); while (true) l.add(new long[1 << 17]); }
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        long m = in.nextLong(), a = in.nextLong(), b = in.nextLong();
        if (m == 1) spin();
        if (m == 2) hog();
        System.out.println(a + b);
    }
}
""",
    "go": """\
package main

import "fmt"

func main() {
	var m, a, b int64
	fmt.Scan(&m, &a, &b)
	if m == 1 {
		x := 0
		for {
			x++
		}
	}
	if m == 2 {
		var held [][]byte
		for {
			block := make([]byte, 1<<20)
			for i := range block {
				block[i] = 1
			}
			held = append(held, block)
		}
	}
	fmt.Println(a + b)
}
""",
    "javascript": """\
const [m, a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
if (m === 1) { for (;;) {} }
if (m === 2) { const held = []; for (;;) held.push(new Array(1 << 20).fill(1)); }
console.log(a + b);
""",
    "rust": """\
use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let mut x: u64 = 0;  // volatile: a spin no optimiser removes (black_box is 1.66's)
    if v[0] == 1 { loop { unsafe { std::ptr::write_volatile(&mut x, x.wrapping_add(1)) } } }
    if v[0] == 2 { let mut held = Vec::new(); loop { held.push(vec![1u8; 1 << 20]); } }
    println!("{}", v[1] + v[2]);
}
""",
    "c": """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    long long m, a, b;
    if (scanf("%lld %lld %lld", &m, &a, &b) != 3) return 1;
    if (m == 1) { volatile long long x = 0; for (;;) x++; }
    while (m == 2) {
        char *block = malloc(1 << 20);
        if (block == NULL) { fputs("out of memory\\n", stderr); return 3; }
        memset(block, 1, 1 << 20);
    }
    printf("%lld\\n", a + b);
    return 0;
}
""",
    "ruby": """\
m, a, b = $stdin.read.split.map(&:to_i)
loop {} if m == 1
if m == 2
  held = []
  loop { held << "x" * (1 << 20) }
end
puts a + b
""",
    "php": """\
<?php
fscanf(STDIN, "%d %d %d", $m, $a, $b);
if ($m == 1) { for (;;) {} }
if ($m == 2) { $held = []; for (;;) { $held[] = str_repeat("x", 1 << 20); } }
echo $a + $b, "\\n";
""",
    "perl": """\
my ($m, $p, $q) = split " ", do { local $/; <STDIN> };
if ($m == 1) { my $x = 0; while (1) { $x++ } }
if ($m == 2) { my @held; while (1) { push @held, "x" x (1 << 20) } }
print $p + $q, "\\n";
""",
    "lua": """\
local m, a, b = io.read("*n", "*n", "*n")
if m == 1 then local x = 0 while true do x = x + 1 end end
if m == 2 then
  local held = {}
  while true do held[#held + 1] = string.rep("x", 1048576) .. #held end
end
print(a + b)
""",
    "typescript": """\
const [m, a, b]: number[] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);
function spin(): never { for (;;) {} }
if (m === 1) spin();
if (m === 2) { const held: number[][] = []; for (;;) held.push(new Array(1 << 20).fill(1)); }
console.log(a + b);
""",
    "R": """\
x <- scan(file("stdin"), quiet = TRUE)
if (x[1] == 1) repeat {}
if (x[1] == 2) { held <- list(); i <- 0; repeat { i <- i + 1; held[[i]] <- numeric(131072) + i } }
cat(format(x[2] + x[3], scientific = FALSE), "\\n", sep = "")
""",
    "verilog": """\
module tb;
  integer m, a, b, n;
  int held[$];
  initial begin
    n = $fscanf(32'h8000_0000, "%d %d %d", m, a, b);
    if (m == 1) while (1) n = n + 1;
    if (m == 2) forever held.push_back(n);
    $display("%0d", a + b);
    $finish;
  end
endmodule
""",
    "scala": """\
object Sums {
  def main(args: Array[String]): Unit = {
    val Array(m, a, b) = scala.io.StdIn.readLine().trim.split("\\\\s+").map(_.toLong)
    if (m == 1) { var k = 0L; while (k >= 0) k += 1 - (k >> 62) }
    val held = new java.util.ArrayList[Array[Long]]
    while (m == 2) held.add(new Array[Long](1 << 17))
    println(a + b)
  }
}
""",
    "kotlin": """\
fun main() {
    val (m, a, b) = readLine()!!.trim().split(Regex("\\\\s+")).map { it.toLong() }
    if (m == 1L) { var k = 0L; while (k >= 0) k += 1 - (k shr 62) }
    if (m == 2L) { val held = ArrayList<LongArray>(); while (true) held.add(LongArray(1 shl 17)) }
    println(a + b)
}
""",
    "csharp": """\
using System;
using System.Collections.Generic;
using System.Linq;
class Sums {
    static void Main() {
        var v = Console.In.ReadToEnd().Split().Where(w => w != "").Select(long.Parse).ToList();
        long k = 0;
        while (v[0] == 1 && k >= 0) k += 1 - (k >> 62);
        var held = new List<long[]>();
        while (v[0] == 2) held.Add(new long[1 << 17]);
        Console.WriteLine(v[1] + v[2]);
    }
}
""",
    "d": """\
import std.stdio, std.conv, std.string, std.array, std.algorithm;
void main() {
    auto v = readln().split.map!(to!long).array;
    for (long k = 0; v[0] == 1 && k >= 0; k += 1 - (k >> 62)) {}
    long[][] held;
    while (v[0] == 2) held ~= new long[1 << 17];
    writeln(v[1] + v[2]);
}
""",
    "racket": """\
#lang racket
(define v (map string->number (string-split (read-line))))
(when (= (first v) 1) (let loop ([k 0]) (loop (add1 k))))
(when (= (first v) 2) (let loop ([held '()]) (loop (cons (make-vector 131072 1) held))))
(displayln (+ (second v) (third v)))
""",
}
BROKEN = {
    "cpp": "int main() { return undeclared; }\n",
    "java": "public class Main { public static void main(String[] a) { int x = ; } }\n",
    "go": "package main\n\nfunc main() { x := }\n",
    "javascript": "const x = ;\n",
    "rust": 'fn main() { let x: i32 = "no"; }\n',
    "c": "int main(void) { return undeclared; }\n",
    "ruby": "def broken(\n",
    "php": "<?php $x = ;\n",
    "perl": "my $x = ;\n",
    "lua": "local x = \n",
    "typescript": "const x: number = ;\n",
    "R": "x <- \n",
    "verilog": "module tb; initial begin $display( end endmodule\n",
    "scala": "object Main { def main(a: Array[String]): Unit = { val x: Int = } }\n",
    "kotlin": "fun main() { val x: Int = }\n",
    "csharp": "class P { static void Main() { int x = ; } }\n",
    "d": "void main() { int x = ; }\n",
    "racket": "#lang racket\n(define x\n",
}
SYNTAX_AT_RUN = {"javascript", "ruby", "php", "perl", "lua", "typescript", "R", "racket"}
"""Languages whose syntax error is the first run's failure, as SandboxFusion runs them:
no build (the runtime reads the file), or TypeScript's transpile, which turns a file
with a syntax error into one that says so and exits 1 (`tsx` fails at run time)."""
OWN_FAILURE = {("c", "hog"): "runtime_error"}
"""Where a case ends otherwise: C's `malloc` answers NULL at the address-space limit, and a
C program's own exit is its failure (no runtime says `out of memory` for it)."""
SUMS = {"inputs": ["0 1 2\n", "0 3 4\n"], "outputs": ["3\n", "7\n"], "time_limit_s": 10}
"""Two tests; 10 s each, as a JVM's or Racket's start took 2-5 s of wall time on a loaded
machine (a correct answer ends at once: the limit costs nothing)."""
CASES = {
    "correct": (SUMS, 1.0, Status.OK, None),
    "wrong": ({**SUMS, "outputs": ["3\n", "8\n"]}, 0.0, Status.WRONG, "wrong_output"),
    "slow": (
        {"inputs": ["1 0 0\n"], "outputs": ["0\n"], "time_limit_s": 0.5},
        0.0,
        Status.WRONG,
        "time_limit",
    ),
    "hog": (
        {"inputs": ["2 0 0\n"], "outputs": ["0\n"], "memory_mb": 64, "time_limit_s": 5},
        0.0,
        Status.WRONG,
        "memory_limit",
    ),
}


JVM_COMPILED = {"scala", "kotlin", "kotlin_script"}
"""Languages whose compiler is a JVM program: 2-3 s of CPU a build, so their builds are `slow`."""


def _language(name: str) -> object:
    found = FOUND[name]
    reason = f"{name}: {found}" if isinstance(found, str) else ""
    slow = [pytest.mark.slow] if name in JVM_COMPILED else []
    return pytest.param(name, marks=[pytest.mark.needs_tool(reason), *slow])


LANGUAGES = [_language(name) for name in PROGRAMS]


@pytest.fixture(scope="module")
def polyglot() -> Iterator[CodeScorer]:
    """One `code` scorer for the module over every toolchain found here."""
    built = CodeScorer(GradingLimits(deadlines={"code": 40.0}), SETTINGS)
    yield built
    built.close()


def _fenced(language: str, source: str) -> str:
    return f"<think>\nAdd.\n</think>\n```{FENCES[language]}\n{source}```\n"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_generated_task_grades_in_every_language(
    polyglot: CodeScorer, language: str, case: str
) -> None:
    """Correct is 1.0, a wrong answer 0.0, a spinner `time_limit`, a hog `memory_limit`."""
    label, reward, status, kind = CASES[case]
    kind = OWN_FAILURE.get((language, case), kind)
    score = polyglot.score("p", _fenced(language, PROGRAMS[language]), label, {})
    assert (score.reward, score.status) == (reward, status), score.details
    assert score.details["language"] == language
    failure = score.details["first_failure"]
    assert (failure or {}).get("kind") == kind, failure


BUILT = [_language(name) for name in PROGRAMS if name not in SYNTAX_AT_RUN]


@pytest.mark.parametrize("language", BUILT)
def test_a_program_that_does_not_compile_is_a_compile_error(
    polyglot: CodeScorer, language: str
) -> None:
    """A build that fails answers `compile_error`, 0.0, the compiler's message in the detail."""
    score = polyglot.score("p", _fenced(language, BROKEN[language]), SUMS, {})
    assert (score.reward, score.status) == (0.0, Status.COMPILE_ERROR), score.details
    failure = score.details["first_failure"]
    assert failure["kind"] == "compile_error" and failure["stderr"].strip(), failure


SCRIPTED = [_language(name) for name in PROGRAMS if name in SYNTAX_AT_RUN]


@pytest.mark.parametrize("language", SCRIPTED)
def test_a_syntax_error_fails_the_first_run_where_nothing_is_built(
    polyglot: CodeScorer, language: str
) -> None:
    """JavaScript, Ruby, PHP, Perl and Lua have no build (the runtime runs the file, as
    SandboxFusion runs it), TypeScript's only strips types: a syntax error is the first
    test's `runtime_error` (the runtime's exit status), 0.0, and no other test runs."""
    score = polyglot.score("p", _fenced(language, BROKEN[language]), SUMS, {})
    assert (score.reward, score.status) == (0.0, Status.WRONG), score.details
    failure = score.details["first_failure"]
    assert (failure["test"], failure["kind"]) == (0, "runtime_error"), failure


POD_GRADING = """\
import json
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.settings import CodeSettings
from reward_service.scorers.code.scorer import CodeScorer
from tests.scorers.code.test_languages import FOUND, PROGRAMS, SUMS, _fenced
scorer = CodeScorer(
    GradingLimits(deadlines={"code": 40.0}), CodeSettings(pch_dir="", build_time_s=30)
)
graded = {"layers": list(scorer.sandbox.layers), "why": {}}
for language in (name for name in PROGRAMS if not isinstance(FOUND[name], str)):
    score = scorer.score("p", _fenced(language, PROGRAMS[language]), SUMS, {})
    graded[language] = score.reward
    if score.reward != 1.0:
        graded["why"][language] = score.details
scorer.close()
print(json.dumps(graded, default=str))
"""


@pytest.mark.parametrize("platform", ["nonroot-pod", "userns"])
def test_every_language_grades_on_a_non_root_platform(platform: str) -> None:
    """Where the manifests' pod runs (`nonroot-pod`: uid 10001, no namespaces, landlock
    without a mount namespace) and where a non-root zygote has namespaces of its own
    (`userns`, the image under podman: a mount namespace with no /proc), a correct answer in
    each language found is 1.0: its toolchain finds what it reads there."""
    from tests.sandbox.harness import platforms

    if reason := platforms.unavailable("nonroot-pod"):
        pytest.skip(reason)
    command = platforms.platform_command(platform, [sys.executable, "-c", POD_GRADING])
    repo = Path(__file__).resolve().parents[3]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    graded = json.loads(done.stdout.splitlines()[-1])
    assert "landlock" in graded.pop("layers")
    why = graded.pop("why")
    found = {name for name in PROGRAMS if not isinstance(FOUND[name], str)}
    assert graded == dict.fromkeys(found, 1.0), why


def test_the_start_up_check_names_every_toolchain_found_with_its_version() -> None:
    """Each language whose toolchain is found here is graded, its version named: a version
    that could not be read (Verilog's vvp prints it on stderr) closed it at start-up."""
    check = check_sandbox(CodeSettings(pch_dir=""), GradingLimits())
    found = {name for name, tools in FOUND.items() if isinstance(tools, Found)}
    assert set(check.details["toolchains"]) == found, check.details["missing_toolchains"]
    assert all(check.details["toolchains"].values()), check.details["toolchains"]
    if isinstance(FOUND["c"], Found):  # the run launcher is built by the C compiler
        assert check.details["launcher"] == "on" and "run launcher: on" in check.summary


def test_the_start_up_check_names_each_missing_toolchain(tmp_path: Path) -> None:
    """The code scorer's start-up check lists what it found and, for the rest, why not;
    without a C compiler, why there is no run launcher (runs are then forked)."""
    settings = CodeSettings(toolchain_path="/nonexistent", pch_dir="", launcher_dir=str(tmp_path))
    check = check_sandbox(settings, GradingLimits())
    assert check.ok and "not graded" in check.summary, check.summary
    assert check.details["missing_toolchains"]["cpp"] == "g++ not found in the toolchain path"
    assert check.details["toolchains"] == {}
    assert check.details["launcher"].startswith("off: no C compiler"), check.details["launcher"]


def test_a_missing_toolchain_answers_error_with_the_reason() -> None:
    """Where no toolchain is found, its language's answers are `error`, saying what is missing."""
    settings = CodeSettings(toolchain_path="/nonexistent")
    scorer = CodeScorer(GradingLimits(), settings)
    try:
        score = scorer.score("p", _fenced("cpp", PROGRAMS["cpp"]), SUMS, {})
    finally:
        scorer.close()
    assert score.status is Status.ERROR
    assert "g++ not found" in score.details["reason"], score.details


@pytest.mark.needs_tool("" if isinstance(FOUND["cpp"], Found) else f"cpp: {FOUND['cpp']}")
def test_the_cpp_standard_is_an_option(polyglot: CodeScorer) -> None:
    """`standard` picks g++'s -std: C++20's `<=>` builds under c++20 only; others are refused."""
    source = "#include <compare>\n#include <iostream>\nint main() { int m, a, b;\n"
    source += "  std::cin >> m >> a >> b;\n"
    source += '  std::cout << ((1 <=> 2) < 0 ? a + b : 0) << "\\n"; }\n'
    answer = _fenced("cpp", source)
    assert polyglot.score("p", answer, SUMS, {"standard": "c++20"}).status is Status.OK
    assert polyglot.score("p", answer, SUMS, {}).status is Status.COMPILE_ERROR
    refused = polyglot.score("p", answer, SUMS, {"standard": "c++99"})
    assert refused.status is Status.ERROR and "dialect" in refused.details["reason"]


@pytest.mark.parametrize("language", [_language("scala"), _language("kotlin"), _language("java")])
def test_a_jvm_compiler_maps_its_classes_from_the_archive_made_once(language: str) -> None:
    """Java's, Scala's and Kotlin's builds map their compiler's classes from the archive the
    service made when it first found the compiler (`ArchivedCompiler.class_archive`), in
    the directory their runs read."""
    found = FOUND[language]
    assert isinstance(found, Found)
    archive = found.tools["class_archive"]
    assert os.path.getsize(archive) > 1 << 20
    assert os.path.dirname(archive) in found.reads
    command = TOOLCHAINS[language].build(found, "", "Main.x", None)
    option = "-J-XX:SharedArchiveFile=" if language == "java" else "-XX:SharedArchiveFile="
    assert f"{option}{archive}" in command.argv


def test_a_compiler_whose_classes_cannot_be_archived_builds_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JDK whose javac cannot archive its classes (no `lib/modules`, a JVM that refuses
    `-XX:ArchiveClassesAtExit`: JDK 8's) is still found; its builds map no archive, and the
    next look does not try again."""
    from reward_service.sandbox import toolchains

    archives = tmp_path / "archives"
    monkeypatch.setattr(toolchains, "CLASS_ARCHIVES", str(archives))
    bin_dir = tmp_path / "jdk" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("javac", "java"):
        (bin_dir / tool).write_text('#!/bin/sh\necho ran >> "$0.runs"\nexit 1\n')
        (bin_dir / tool).chmod(0o755)
    java = TOOLCHAINS["java"]
    found = java.discover(str(bin_dir))
    assert isinstance(found, Found) and "class_archive" not in found.tools, found
    assert not any("SharedArchive" in arg for arg in java.build(found, "", "M.java", None).argv)
    assert [p.suffix for p in archives.iterdir()] == [".failed"]
    assert isinstance(java.discover(str(bin_dir)), Found)
    assert (bin_dir / "javac.runs").read_text() == "ran\n"


@pytest.mark.parametrize(
    ("source", "name"),
    [
        (b"// a comment\nobject Sums extends App {}\nobject Later", "Sums.scala"),
        (b"class Only { def main(a: Array[String]) = () }\n", "Main.scala"),
        (b"val myobject Foo = 1\nobject Real {}\n", "Real.scala"),
    ],
)
def test_scala_runs_the_first_object_of_its_source(source: bytes, name: str) -> None:
    """Scala's file, and the class its run starts, is its source's first `object`, as
    SandboxFusion's `scala <object>`; without one, `Main` (the run then fails)."""
    assert TOOLCHAINS["scala"].source_name(memoryview(source)) == name
