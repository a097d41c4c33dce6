"""A program's files are its compiler's inputs, never its configuration; a build is capped
as a whole.

Each test gives a harmless program files that would configure its toolchain if the
build read them (they would make it print `configured`), in the build's working
directory and in the directory the build uses as HOME (`toolchains.BUILD_HOME`), and
checks the program still prints `plain`. `BuildWatch` counts a build's processes and
sums their memory, all of them together.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.supervise import BuildWatch, descendants
from reward_service.sandbox.toolchains import BUILD_HOME, TOOLCHAINS, Found, discover
from reward_service.sandbox.zygote_client import ZygoteSandbox
from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH

FOUND = discover(DEFAULT_TOOLCHAIN_PATH)
LIMITS = Limits(time_s=5.0, memory_mb=256, output_bytes=1 << 16)
CONFIGURED = "print('configured')\n"


def needs(language: str) -> pytest.MarkDecorator:
    found = FOUND[language]
    return pytest.mark.needs_tool("" if isinstance(found, Found) else f"{language}: {found}")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    languages = [language for language, found in FOUND.items() if isinstance(found, Found)]
    with ZygoteSandbox(toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=languages) as running:
        yield running


def at_home_too(files: dict[str, str]) -> tuple[tuple[str, bytes], ...]:
    """`files` in the working directory and again under the build's home's name."""
    both = {**files, **{f"{BUILD_HOME}/{path}": text for path, text in files.items()}}
    return tuple((path, text.encode()) for path, text in both.items())


def printed(sandbox: ZygoteSandbox, language: str, source: str, files: dict[str, str]) -> str:
    done = sandbox.execute(Program(language, source, files=at_home_too(files)), [b""], LIMITS, 60)
    assert done.build is None or done.build.kind is Kind.OK, done.build
    (outcome,) = done.outcomes()
    assert "configured" not in outcome.stderr, outcome
    return outcome.stdout.decode()


@needs("go")
def test_go_reads_no_env_file_and_no_goflags_from_the_files(sandbox: ZygoteSandbox) -> None:
    """`.config/go/env` setting GOFLAGS (here `-ldflags=-X`, which would set the printed
    string; `-toolexec` would run a program of the request's) changes nothing."""
    source = 'package main\n\nimport "fmt"\n\nvar marker = "plain"\n\n'
    source += "func main() { fmt.Println(marker) }\n"
    env = "GOFLAGS=-ldflags=-X=main.marker=configured\n"
    files = {".config/go/env": env, "go/env": env, "gopath/src/fmt/fmt.go": "package fmt\n"}
    assert printed(sandbox, "go", source, files) == "plain\n"


@needs("cpp")
def test_gxx_takes_no_header_and_no_spec_from_the_files(sandbox: ZygoteSandbox) -> None:
    """Files named like system headers and g++'s spec and tools do not replace them."""
    source = "#include <bits/stdc++.h>\n#include <iostream>\n"
    source += 'int main() { std::cout << "plain\\n"; }\n'
    broken = "#error configured\n"
    files = {"iostream": broken, "bits/stdc++.h": broken, "specs": "*cc1plus:\n-Dconfigured\n"}
    files |= {"as": "#!/bin/sh\necho configured\n", "ld": "#!/bin/sh\necho configured\n"}
    assert printed(sandbox, "cpp", source, files) == "plain\n"


@needs("c")
def test_gcc_takes_no_header_and_no_spec_from_the_files(sandbox: ZygoteSandbox) -> None:
    """C as C++: files named like system headers and gcc's spec and tools replace none."""
    source = '#include <stdio.h>\nint main(void) { puts("plain"); return 0; }\n'
    broken = "#error configured\n"
    files = {"stdio.h": broken, "specs": "*cc1:\n-Dconfigured\n"}
    files |= {"as": "#!/bin/sh\necho configured\n", "ld": "#!/bin/sh\necho configured\n"}
    assert printed(sandbox, "c", source, files) == "plain\n"


@needs("rust")
def test_rustc_reads_no_cargo_configuration_from_the_files(sandbox: ZygoteSandbox) -> None:
    """`.cargo/config.toml` and a `lib/rustlib` beside the source change nothing."""
    source = (
        'fn main() { println!("{}", if cfg!(configured) { "configured" } else { "plain" }); }\n'
    )
    config = '[build]\nrustflags = ["--cfg", "configured"]\n'
    files = {".cargo/config.toml": config, "lib/rustlib/x86_64-unknown-linux-gnu/bin/x": "x"}
    assert printed(sandbox, "rust", source, files) == "plain\n"


@needs("java")
def test_the_jvm_reads_no_options_file_from_the_files(sandbox: ZygoteSandbox) -> None:
    """`.hotspotrc` and `@`-files of options are not read by javac's JVM or the program's."""
    source = "public class Main {\n    public static void main(String[] a) {\n"
    source += '        System.out.println("plain");\n    }\n}\n'
    options = "-XX:+PrintVMOptions\n-Dconfigured=1\n"
    files = {".hotspotrc": "+PrintVMOptions\n", "@argfile": options, "Main.java@": options}
    files |= {".java/options": options}
    assert printed(sandbox, "java", source, files) == "plain\n"


@needs("javascript")
def test_node_reads_no_options_from_the_files(sandbox: ZygoteSandbox) -> None:
    """An `.npmrc` asking for `--require` of a file, a `.noderc`, change nothing."""
    source = 'console.log("plain");\n'
    files = {".npmrc": "node-options=--require ./configured.js\n"}
    files |= {"configured.js": 'console.log("configured");\n'}
    assert printed(sandbox, "javascript", source, files) == "plain\n"


@needs("typescript")
def test_the_typescript_transpile_reads_no_project_configuration(sandbox: ZygoteSandbox) -> None:
    """A `tsconfig.json`, a `typescript` module under `node_modules` and an `.npmrc` among
    the files change nothing: the transpile loads the system's library by its path."""
    source = 'const word: string = "plain";\nconsole.log(word);\n'
    configured = 'console.log("configured");\n'
    files = {"tsconfig.json": '{"compilerOptions": {"outFile": "configured.js"}}\n'}
    files |= {"node_modules/typescript/lib/typescript.js": configured, "configured.js": configured}
    files |= {".npmrc": "node-options=--require ./configured.js\n"}
    assert printed(sandbox, "typescript", source, files) == "plain\n"


@needs("verilog")
def test_iverilog_takes_no_helper_and_no_module_from_the_files(sandbox: ZygoteSandbox) -> None:
    """Files named like iverilog's own passes (`ivl`, `ivlpp`), its VPI modules and a
    command file change nothing: its helpers come from the system's `ivl` directory."""
    source = 'module tb;\n  initial begin\n    $display("plain");\n    $finish;\n  end\nendmodule\n'
    shell = "#!/bin/sh\necho configured\n"
    files = {"ivl": shell, "ivlpp": shell, "system.vpi": shell, "iverilog.conf": "-Dconfigured\n"}
    files |= {".iverilogrc": "-Dconfigured\n", "vvp.conf": "configured\n"}
    assert printed(sandbox, "verilog", source, files) == "plain\n"


@pytest.mark.parametrize(
    ("language", "source"),
    [
        pytest.param(
            "scala",
            'object Main extends App { println("plain") }\n',
            marks=[needs("scala"), pytest.mark.slow],
        ),
        pytest.param(
            "kotlin", 'fun main() { println("plain") }\n', marks=[needs("kotlin"), pytest.mark.slow]
        ),
        pytest.param(
            "kotlin_script", 'println("plain")\n', marks=[needs("kotlin_script"), pytest.mark.slow]
        ),
    ],
)
def test_the_jvm_compilers_read_no_options_and_no_launcher_from_the_files(
    sandbox: ZygoteSandbox, language: str, source: str
) -> None:
    """`.hotspotrc` and `@`-files of options are not read by scalac's or kotlinc's JVM, and a
    Kotlin file named as the sandbox's own script launcher does not replace it."""
    options = "-XX:+PrintVMOptions\n-Dconfigured=1\n"
    files = {".hotspotrc": "+PrintVMOptions\n", "@argfile": options, ".java/options": options}
    files |= {"SandboxScript.kt": 'fun main(args: Array<String>) { println("configured") }\n'}
    assert printed(sandbox, language, source, files) == "plain\n"


@needs("csharp")
def test_mono_takes_no_assembly_config_and_no_listener_from_the_files(
    sandbox: ZygoteSandbox,
) -> None:
    """A `main.exe.config` and a C# file named as the sandbox's own trace listener among the
    files change nothing (the sandbox's are laid out first), nor does Mono's `config` in
    the build's home: a trace line goes to stderr through the sandbox's listener."""
    source = 'class P { static void Main() { System.Diagnostics.Trace.WriteLine("trace");\n'
    source += '    System.Console.WriteLine("plain"); } }\n'
    listener = "namespace RewardServiceSandbox { public sealed class FailingAssertListener :"
    listener += " System.Diagnostics.TraceListener { public override void Write(string m) {"
    listener += ' System.Console.WriteLine("configured"); } public override void WriteLine('
    listener += 'string m) { System.Console.WriteLine("configured"); } } }\n'
    config = '<configuration><system.diagnostics><trace><listeners><add name="c" type="'
    config += 'RewardServiceSandbox.FailingAssertListener, main" /></listeners></trace>'
    config += "</system.diagnostics></configuration>\n"
    files = {"SandboxAsserts.cs": listener, "main.exe.config": config, ".mono/config": config}
    assert printed(sandbox, "csharp", source, files) == "plain\n"


@needs("d")
def test_ldc_reads_no_configuration_from_the_files(sandbox: ZygoteSandbox) -> None:
    """An `ldc2.conf` among the files (in the working directory, where LDC looks first, and
    as `~/.ldc/ldc2.conf`) adding a version switch changes nothing: the build names
    Debian's configuration."""
    source = "import std.stdio;\nvoid main() {\n"
    source += '    version (Configured) writeln("configured"); else writeln("plain");\n}\n'
    config = 'default:\n{\n    switches = ["-d-version=Configured"];\n};\n'
    files = {"ldc2.conf": config, ".ldc/ldc2.conf": config}
    assert printed(sandbox, "d", source, files) == "plain\n"


def test_python_runs_no_site_or_user_customization_from_the_files(
    sandbox: ZygoteSandbox,
) -> None:
    """`sitecustomize.py`, `usercustomize.py` (in the working directory and a user site
    under HOME) and a `pyvenv.cfg` do not run: a run starts from the zygote, `-S -I`."""
    user_site = ".local/lib/python{}.{}/site-packages".format(*sys.version_info[:2])
    files = {"sitecustomize.py": CONFIGURED, "usercustomize.py": CONFIGURED}
    files |= {f"{user_site}/usercustomize.py": CONFIGURED, "pyvenv.cfg": "home = /nowhere\n"}
    files |= {f"{user_site}/configured.pth": "import configured\n", "configured.py": CONFIGURED}
    assert printed(sandbox, "python", "print('plain')\n", files) == "plain\n"


def test_every_compiled_language_has_a_configuration_test() -> None:
    """A new toolchain with a build comes with a test of what its build reads. (A runtime
    with none, Ruby's or Perl's, reads what it reads inside the program's own run, under
    the program's confinement: a file it takes for configuration gains nothing the
    program's own code has not.)"""
    tested = {"go", "cpp", "rust", "java", "javascript", "c", "typescript", "verilog"}
    tested |= {"scala", "kotlin", "kotlin_script", "csharp", "d", "D_ut"}  # D_ut is d's build
    assert {name for name, toolchain in TOOLCHAINS.items() if toolchain.builds} <= tested


def _tree(children: int, megabytes: int) -> subprocess.Popen[str]:
    """A process with `children` children, each holding `megabytes` resident."""
    child = f"b = bytearray({megabytes} << 20); print(flush=True); import time; time.sleep(60)"
    code = "import subprocess, sys, time\n"
    code += f"ps = [subprocess.Popen([sys.executable, '-c', {child!r}], stdout=subprocess.PIPE)"
    code += f" for _ in range({children})]\n"
    code += "[p.stdout.readline() for p in ps]\nprint('ready', flush=True)\ntime.sleep(60)\n"
    tree = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert tree.stdout is not None and tree.stdout.readline() == "ready\n"
    return tree


def _end(tree: subprocess.Popen[str]) -> None:
    for pid in descendants(tree.pid):
        subprocess.run(["kill", "-9", str(pid)], check=False)
    tree.kill()
    tree.communicate()


def _verdict(watch: BuildWatch) -> str | None:
    time.sleep(BuildWatch.INTERVAL_S * 2)
    return watch.exceeded()


def test_a_builds_processes_are_counted_together() -> None:
    """Four processes under a build's root pass a cap of three; the same under a cap of
    sixteen do not."""
    tree = _tree(4, 1)
    try:
        assert len(descendants(tree.pid)) == 4
        assert _verdict(BuildWatch(tree.pid, 1 << 40, 3)) == "processes"
        assert _verdict(BuildWatch(tree.pid, 1 << 40, 16)) is None
    finally:
        _end(tree)


def test_a_builds_memory_is_summed_over_its_processes() -> None:
    """Three processes of 40 MB each pass a 100 MB build budget that each alone stays under."""
    tree = _tree(3, 40)
    try:
        assert _verdict(BuildWatch(tree.pid, 100 << 20, 16)) == "memory"
        assert _verdict(BuildWatch(tree.pid, 400 << 20, 16)) is None
    finally:
        _end(tree)
