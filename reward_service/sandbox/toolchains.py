"""Languages beyond Python: where each toolchain is, how it builds a program, how it runs.

Stdlib only (the zygote imports it). A language is a `Toolchain`: a build
step (the compiler) run once per program in a confined run of its own, and
a launch (the binary, or the JVM on the build) exec'd by every run of that
program; a language without a build (JavaScript, an `Interpreter`: Ruby,
PHP, Perl, Lua, R) has its runtime exec'd on the source by every run, and
TypeScript is transpiled once, then run as JavaScript. `discover` finds the
tools in the service's PATH, in a grading worker (the zygote has no
environment), and resolves them to the files the runs exec (a rustup proxy
to its toolchain's rustc); what it finds reaches the zygote as JSON.
docs/code.md lists the languages, their commands and their sizes.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import subprocess

BUILD_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH of a build run: the compilers' own helpers (cc1plus, as, ld, cc) are found there."""
BUILD_HOME = ".build-home"
"""A build's HOME, TMPDIR and caches, beside its source: made empty by the zygote after the
program's files are laid out, none of which lands there (`Program.files` under this name
are left out). So a build finds no configuration but the sandbox's own: a request's
files are the compiler's inputs and nothing else (`.config/go/env` in HOME once set
`GOFLAGS=-toolexec=...`)."""
_PROBE_TIMEOUT_S = 20.0
_PUBLIC_CLASS = re.compile(
    rb"(?<![\w$\x80-\xff])public\s+(?:final\s+|abstract\s+)*class\s+"
    rb"([A-Za-z_$\x80-\xff][\w$\x80-\xff]*)"
)
"""A Java source's public class, matched in its bytes (an identifier's non-ASCII letters as
UTF-8 bytes): the zygote never makes a copy of a source (docs/sandbox.md, "Processes")."""
PCH_HEADER = "bits/stdc++.h"
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*(?:<([^>\n]{1,80})>|(")[^"\n]*")', re.M)
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*(?:define|undef)\b", re.M)
_C_HEADERS = frozenset(
    b"c" + name
    for name in re.findall(
        rb"\w+",
        b"assert ctype errno fenv float inttypes iso646 limits locale math setjmp signal "
        b"stdalign stdarg stdbool stddef stdint stdio stdlib string tgmath time uchar wchar "
        b"wctype complex",
    )
)
"""The C library's headers as C++ names them (`<cstdio>`): light to parse, not worth the
precompiled header on their own."""
CONTEST_HEADERS = (
    *("cassert", "cctype", "climits", "cmath", "cstdint", "cstdio", "cstdlib", "cstring"),
    *("algorithm", "array", "bitset", "chrono", "deque", "functional", "iomanip", "iostream"),
    *("iterator", "limits", "list", "map", "memory", "numeric", "queue", "random", "set"),
    *("sstream", "stack", "stdexcept", "string", "tuple", "unordered_map", "unordered_set"),
    *("utility", "vector"),
)
"""The headers contest programs list (a sample of Codeforces solutions' includes), the
rest of `bits/stdc++.h` left out: `<regex>`, `<filesystem>` and their like take most of
its parse, and its precompiled form (100 MB against 67) loads in 0.1-0.2 s more."""
HEAVY_CONTEST_HEADERS = ("chrono", "iomanip", "memory", "random")
"""Among `CONTEST_HEADERS`, those whose templates every build that includes them
instantiates anew (a precompiled header cannot hold what is instantiated at the end of a
translation unit): +22 ms of CPU per build together, where the other 33 together cost
what nine of them alone do."""
CONTEST_TIERS = (
    ("contest-light.h", tuple(h for h in CONTEST_HEADERS if h not in HEAVY_CONTEST_HEADERS)),
    ("contest.h", CONTEST_HEADERS),
)
"""The precompiled headers beside `bits/stdc++.h`'s, smallest first: a program that lists
its headers gets the first that holds them all (`Cpp.forced_header`)."""
_TIERS = tuple((name, frozenset(h.encode() for h in headers)) for name, headers in CONTEST_TIERS)


@dataclass(frozen=True)
class Found:
    """A toolchain found on this machine: its tools' real paths and what runs must read."""

    tools: dict[str, str]
    """Tool name -> its absolute path (what a build or run execs; Rust's sysroot too)."""
    reads: list[str]
    """Directories (or files) beyond the system's that its builds and runs read (a sysroot)."""
    version: str = ""
    """The compiler's version line, when asked for (`discover(..., versions=True)`)."""


@dataclass(frozen=True)
class Command:
    """What a confined run execs: the file (opened by the zygote), argv, environment."""

    executable: str
    argv: list[str]
    env: dict[str, str]
    directories: tuple[str, ...] = ()
    """Made in the run's directory before it starts, parents first."""
    links: dict[str, str] = field(default_factory=dict)
    """Symbolic links made there, name -> target."""
    files: dict[str, str] = field(default_factory=dict)
    """Files of the sandbox's own made there, name -> text (R's site profile)."""
    source_prefix: str = ""
    """Text of the sandbox's own written before the program's source, in the same file (C#'s
    implicit `using`s, which C# 7 cannot declare in another file)."""


class Toolchain:
    """One compiled (or checked) language; subclasses fill in the commands."""

    language: str
    tools: tuple[str, ...]
    """Executables looked up in PATH, the first one the compiler."""
    dialects: tuple[str, ...] = ()
    """Accepted values of `Program.dialect` (a standard, an edition), the first the default."""
    source_file = "main"
    builds = True
    """Whether a program is built once before its runs; without, each run's directory holds
    the source (`source_file`) and the launch reads it (JavaScript, as SandboxFusion runs
    it: a syntax error is the run's failure)."""
    writes = False
    """Whether its runtime writes a file before the program starts (R's session directory):
    closed where runs may write none (`zygote_client.write_gap`)."""
    reports_build = True
    """Whether `/run_code` answers its build as `compile_result`: not for a build that
    SandboxFusion's runner has not (TypeScript's transpile, which its `tsx` does as it
    runs; a Kotlin script's, `kotlin main.kts`'s; C#'s, `dotnet run`'s), whose time is the larger of
    `compile_timeout` and `run_timeout` and whose failure is answered as the run's."""
    outputs: tuple[str, ...] = ("main",)
    """Files of the build kept for the runs (a glob suffix with `*`)."""
    memory_errors: tuple[bytes, ...] = ()
    """Standard-error text that means the program ran out of memory."""
    runtime_mb = 0
    """Address space a run gets beyond its memory limit (a JVM's or V8's reservations)."""
    syscalls: tuple[str, ...] = ()
    """Calls the sandbox denies that its builds and runs need (`seccomp.SyscallFilter`)."""
    unusable: tuple[bytes, ...] = ()
    """How a failed build's messages start when the toolchain cannot work here, whatever
    the program (the answer is then `error`, not `compile_error`): the compiler's own
    first words, before it reads the source, so no program can print them first."""

    def source_name(self, source: memoryview) -> str:
        """The file the build reads `source` from, read in place in the zygote's private
        buffer: never decoded or copied whole, as a copy would stay in the heap every later
        run is forked with."""
        return self.source_file

    def dialect(self, asked: str | None) -> str:
        """The dialect to build with; ValueError for one this language does not know."""
        if asked is None or asked == "":
            return self.dialects[0] if self.dialects else ""
        if asked not in self.dialects:
            raise ValueError(
                f"{self.language} has no dialect {asked[:32]!r}; one of {', '.join(self.dialects)}"
            )
        return asked

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        """The build's command; `pch` a directory holding a precompiled header for this
        dialect (C++'s; the others build without)."""
        raise NotImplementedError

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        """The program's run: by default the built binary, started as `./main`."""
        return Command(os.path.join(build_dir, "main"), ["./main"], {})

    def discover(self, path: str) -> Found | str:
        """The toolchain as found in `path`, or why it is not usable here."""
        tools: dict[str, str] = {}
        for tool in self.tools:
            where = which(tool, path)
            if where is None:
                return f"{tool} not found in the toolchain path"
            tools[tool] = os.path.realpath(where)
        return Found(tools, [])

    def version(self, tools: Mapping[str, str]) -> str:
        """The compiler's version line (it runs, unconfined: the start-up check asks)."""
        done = run_tool([tools[self.tools[0]], "--version"], {"PATH": BUILD_PATH})
        return (done.stdout or done.stderr).decode(errors="replace").strip().splitlines()[0]


class Cpp(Toolchain):
    """g++, linked dynamically as SandboxFusion links (a program may define a libc function
    of its own, SandboxFusion's `exit` wrapper; `-static` made that a link error): a run
    execs its own binary, and the loader maps the system's libstdc++ and libc."""

    language = "cpp"
    tools = ("g++",)
    dialects = ("c++17", "c++20", "c++14", "c++11", "gnu++17", "gnu++20", "gnu++14", "gnu++11")
    source_file = "main.cpp"
    memory_errors = (b"std::bad_alloc",)

    def build(
        self,
        found: Found,
        dialect: str,
        source_name: str,
        pch: str | None,
        *,
        forced: str | None = None,
    ) -> Command:
        """With `pch`, a program that starts with `#include <bits/stdc++.h>` loads it
        precompiled (`-I`); with `forced` too (`bits/stdc++.h` or a `CONTEST_TIERS` one),
        every program gets that precompiled header first (`-include`), so its own standard
        includes are no-ops by their include guards: a contest program's list of headers
        builds at a precompiled header's cost. The zygote asks for that where
        `forced_header` names one, and builds a program it refuses again without (more of
        the library is then in scope, which can clash with a name the program defines:
        `y1`, `index`)."""
        if pch and forced:
            include = ["-include", os.path.join(pch, forced), "-Winvalid-pch"]
        else:
            include = [f"-I{pch}", "-Winvalid-pch"] if pch else []
        argv = ["g++", f"-std={dialect}", "-O2", "-pipe", "-fmax-errors=20", *include]
        argv += ["-fuse-ld=gold"] if "ld.gold" in found.tools else []
        argv += [source_name, "-o", "main", "-lm"]
        return Command(found.tools["g++"], argv, {"PATH": BUILD_PATH})

    def discover(self, path: str) -> Found | str:
        """g++, and gold where binutils has it: C++ links faster with it (a static build of
        a `bits/stdc++.h` program took 0.38 s here, 0.46 s with the default linker)."""
        return _with_gold(super().discover(path))

    @staticmethod
    def forced_header(source: memoryview) -> str | None:
        """The precompiled header that builds `source` faster and the same, if one does:
        for a program that includes two or more of the C++ library's headers, all of them
        among `CONTEST_HEADERS`, the smallest contest header that holds them
        (`CONTEST_TIERS`, loaded in 0.1-0.2 s less than `bits/stdc++.h`'s); for one that
        includes `bits/stdc++.h` or another standard header, `bits/stdc++.h`. None (loading
        one costs about what parsing two C++ headers does; a C header alone parses in a
        tenth of that) for a program of fewer C++ headers, with a header of its own
        (`#include "..."`), or that defines a macro before its last standard include
        (`_GLIBCXX_DEBUG`, `NDEBUG`: they would no longer reach the headers). Read in place,
        as `source_name` reads."""
        names: set[bytes] = set()
        last = 0
        for match in _INCLUDE.finditer(source):
            if match.group(2):
                return None
            names.add(match.group(1))
            last = match.start()
        if not names or _DEFINE.search(source, 0, last) is not None:
            return None
        cxx = [n for n in names if b"." not in n and b"/" not in n and n not in _C_HEADERS]
        if PCH_HEADER.encode() not in names and len(cxx) < 2:
            return None
        plain = {n for n in names if b"/" in n or not n.endswith(b".h")}  # <stdio.h>: <cstdio>
        return next((name for name, held in _TIERS if plain <= held), PCH_HEADER)

    @staticmethod
    def pch_flags(dialect: str) -> list[str]:
        """What a precompiled `bits/stdc++.h` is built with: a build of `dialect` uses it."""
        return [f"-std={dialect}", "-O2", "-x", "c++-header"]


def _with_gold(found: Found | str) -> Found | str:
    gold = which("ld.gold", BUILD_PATH)
    if isinstance(found, str) or gold is None:
        return found
    return Found({**found.tools, "ld.gold": os.path.realpath(gold)}, found.reads)


class C(Toolchain):
    """gcc, linked dynamically as C++ is (`Cpp`): SandboxFusion has no C runner; the
    service's own, with gcc's default standard (`gnu17`) first."""

    language = "c"
    tools = ("gcc",)
    dialects = ("gnu17", "c17", "c11", "c99", "gnu11", "gnu99", "c2x", "gnu2x")
    source_file = "main.c"

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = ["gcc", f"-std={dialect}", "-O2", "-pipe", "-fmax-errors=20"]
        argv += ["-fuse-ld=gold"] if "ld.gold" in found.tools else []
        argv += [source_name, "-o", "main", "-lm"]
        return Command(found.tools["gcc"], argv, {"PATH": BUILD_PATH})

    def discover(self, path: str) -> Found | str:
        """gcc, and gold where binutils has it (`Cpp.discover`)."""
        return _with_gold(super().discover(path))


LDC_CONFIGS = ("/etc/ldc2.conf",)
"""Debian's LDC configuration (druntime's and Phobos's import paths and libraries), a read
path of its builds where it exists."""


class D(Toolchain):
    """D by ldc2 (Debian's LDC: dmd's front end, dmd's command line), linked dynamically (the
    system's druntime and Phobos), without `-unittest`: a program's `main` runs. Its build
    (ldc2 is a D program) and its runs preload the sandbox's library (`preload`): druntime
    asks glibc for the main thread's stack, which glibc reads from /proc, and its garbage
    collector then scanned a range it was never given (SIGSEGV at its first collection)."""

    language = "d"
    tools = ("ldc2",)
    source_file = "main.d"
    flags: tuple[str, ...] = ()
    memory_errors = (b"core.exception.OutOfMemoryError",)

    def discover(self, path: str) -> Found | str:
        found = super().discover(path)
        if isinstance(found, str):
            return found
        from reward_service.sandbox import preload

        try:
            library = preload.ensure(BUILD_PATH)
        except OSError as e:
            return f"D needs the sandbox's preloaded library, not built: {e}"
        cc = which("cc", BUILD_PATH)
        if cc is None:
            return "ldc2 needs a linker: no cc in /usr/bin"
        configs = [c for c in LDC_CONFIGS if os.path.isfile(c)]
        tools = {**found.tools, "preload": library, "cc": os.path.realpath(cc)}
        tools |= {"config": configs[0]} if configs else {}
        return Found(tools, [os.path.dirname(library), *configs])

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        # argv[0] its own path: LDC finds its configuration (ldc2.conf) beside itself,
        # through /proc/self/exe where there is one, else from argv[0]
        # the linker by its real path: `cc` is a link through /etc/alternatives, unread;
        # the configuration by its path: LDC looks for an `ldc2.conf` in the working
        # directory first, where the program's files are
        argv = [found.tools["ldc2"], f"--gcc={found.tools['cc']}", *self.flags]
        argv += [f"-conf={found.tools['config']}"] if "config" in found.tools else []
        argv += ["-of=main", source_name]
        env = {"PATH": BUILD_PATH, "LD_PRELOAD": found.tools["preload"]}
        return Command(found.tools["ldc2"], argv, env)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        binary = super().launch(found, build_dir, source_name, memory_mb)
        return Command(binary.executable, binary.argv, {"LD_PRELOAD": found.tools["preload"]})


class DUnittest(D):
    """SandboxFusion's `D_ut` (`dmd main.d -unittest`): the program's `unittest` blocks run
    first, and druntime then runs `main` only where there are none (a failed one exits 1)."""

    language = "D_ut"
    flags = ("-unittest",)


class Verilog(Toolchain):
    """Icarus Verilog as SandboxFusion runs it (VerilogEval's flags): `iverilog -Wall
    -Winfloop -Wno-timescale -g2012 -s tb`, the top module `tb`, then `vvp -n` on the
    compiled design (vvp loads its VPI modules from the system's `ivl` directory)."""

    language = "verilog"
    tools = ("iverilog", "vvp")
    source_file = "main.sv"
    outputs = ("main.vvp",)
    memory_errors = (b"std::bad_alloc",)  # vvp is C++

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = ["iverilog", "-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb"]
        argv += ["-o", "main.vvp", source_name]
        return Command(found.tools["iverilog"], argv, {"PATH": BUILD_PATH})

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        return Command(found.tools["vvp"], ["vvp", "-n", os.path.join(build_dir, "main.vvp")], {})

    def version(self, tools: Mapping[str, str]) -> str:
        """vvp's first line (on stderr)."""
        done = run_tool([tools["vvp"], "-V"])
        text = (done.stdout + done.stderr).decode(errors="replace")
        return next((line.strip() for line in text.splitlines() if line.strip()), "")


class Rust(Toolchain):
    """rustc (a rustup proxy resolved to its toolchain's rustc), statically linked."""

    language = "rust"
    tools = ("rustc",)
    dialects = ("2021", "2018", "2015", "2024")
    source_file = "main.rs"
    memory_errors = (b"memory allocation of",)
    unusable = tuple(  # a rustc that needs /proc where runs have none
        f"thread '{name}' panicked at 'failed to get current_exe".encode()
        for name in ("rustc", "main")
    )

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = ["rustc", "--edition", dialect, "-O", "-C", "target-feature=+crt-static"]
        argv += ["-C", f"linker={found.tools['cc']}", "--sysroot", found.tools["sysroot"]]
        argv += ["-o", "main", source_name]
        # rustc 1.63 (Debian's) looks for a sysroot to list translations from whatever
        # --sysroot says: from argv[0] when that names a link and ./lib/rustlib exists,
        # else from /proc/self/exe, panicking where runs have no /proc (a user namespace's
        # mount namespace): argv[0] is a link to it in the build's directory
        directories = ("lib", "lib/rustlib")
        links = {"rustc": found.tools["rustc"]}
        return Command(found.tools["rustc"], argv, {"PATH": BUILD_PATH}, directories, links)

    def discover(self, path: str) -> Found | str:
        proxy = which("rustc", path)
        if proxy is None:
            return "rustc not found in the toolchain path"
        try:
            done = run_tool(
                [proxy, "--print", "sysroot"], {"PATH": path, "HOME": os.path.expanduser("~")}
            )
        except OSError as e:
            return f"rustc does not run: {e}"
        sysroot = os.path.realpath(done.stdout.decode().strip())
        rustc = os.path.join(sysroot, "bin", "rustc")
        if not os.access(rustc, os.X_OK):
            return f"no rustc in its sysroot {sysroot}"
        cc = which("cc", BUILD_PATH)
        if cc is None:
            return "rustc needs a linker: no cc in /usr/bin"
        tools = {"rustc": rustc, "cc": os.path.realpath(cc), "sysroot": sysroot}
        return Found(tools, [] if _under_system(sysroot) else [sysroot])


class Go(Toolchain):
    """go build with cgo off: a static binary; its cache lives in the build's own home."""

    language = "go"
    tools = ("go",)
    source_file = "main.go"
    memory_errors = (b"out of memory", b"cannot allocate memory", b"failed to reserve")
    runtime_mb = 768

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        env = {"PATH": BUILD_PATH, "CGO_ENABLED": "0", "GO111MODULE": "off", "GOWORK": "off"}
        # no go env file (GOENV), no GOFLAGS: the go command's configuration is all here
        env |= {"GOENV": "off", "GOFLAGS": "", "GOTOOLCHAIN": "local"}
        env |= {"GOCACHE": "{home}/gocache", "GOPATH": "{home}/gopath"}
        env |= {"GOMAXPROCS": "2"} | ({"GOROOT": found.reads[0]} if found.reads else {})
        return Command(found.tools["go"], ["go", "build", "-o", "main", source_name], env)

    def discover(self, path: str) -> Found | str:
        found = super().discover(path)
        if isinstance(found, str):
            return found
        root = os.path.dirname(os.path.dirname(found.tools["go"]))
        return Found(found.tools, [] if _under_system(root) else [root])

    def version(self, tools: Mapping[str, str]) -> str:
        done = run_tool([tools["go"], "version"])
        return done.stdout.decode(errors="replace").strip()

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        binary = super().launch(found, build_dir, source_name, memory_mb)
        return Command(binary.executable, binary.argv, {"GOMAXPROCS": "1", "GOGC": "100"})


_JVM = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-XX:CICompilerCount=1"]
_JVM += ["-XX:ReservedCodeCacheSize=32m", "-XX:CompressedClassSpaceSize=64m", "-Xshare:auto"]
_JVM += ["-XX:-UseContainerSupport"]


JAVA_LIBRARIES = ("/usr/share/java/javatuples.jar",)
"""Jars on a Java program's class path where this machine has them: SandboxFusion's Java
has javatuples (MultiPL-E's Java imports it in every program); Debian ships it as
`libjavatuples-java`."""


def _jdk_reads(java: str) -> list[str]:
    """What a JDK's `java` (its real path) reads beyond the system's directories."""
    home = os.path.dirname(os.path.dirname(java))
    # Debian links each file of conf/ to /etc/java-<n>-openjdk: the JVM reads them all
    conf = os.path.realpath(os.path.join(home, "conf", "security", "java.security"))
    beyond = {home, os.path.dirname(os.path.dirname(conf))}
    return sorted(p for p in beyond if os.path.isdir(p) and not _under_system(p))


CLASS_ARCHIVES = os.path.join(sys.prefix, "share", "reward-service", "jvm")
"""Where the JVM compilers' class archives are made (`ArchivedCompiler.class_archive`): beside
Python, where builds may read."""


class ArchivedCompiler(Toolchain):
    """A compiler that runs on the JVM (javac, scalac, kotlinc): its classes archived once
    (`class_archive`), then mapped by each build (`archive_flags`)."""

    launcher = ""
    """The compiler's name: the archive's file is named after it."""
    sample = ""
    """A small program the compiler builds once, unconfined, when its classes are archived."""
    jvm_prefix = ""
    """What a JVM option is written after on the compiler's command line (javac's `-J`)."""

    def archive_inputs(self, found: Found) -> list[str]:
        """The files whose identity (path, size, time) the archive's name hashes."""
        raise NotImplementedError

    def archived(self, found: Found) -> Found:
        """`found` with its archive (`class_archive`) as the tool `class_archive` and its
        directory read, where one is or can be made; else `found` as it is."""
        archive = self.class_archive(found)
        if archive is None:
            return found
        return Found({**found.tools, "class_archive": archive}, [*found.reads, CLASS_ARCHIVES])

    def archive_flags(self, found: Found) -> list[str]:
        """The JVM options that map the archive, where there is one."""
        if "class_archive" not in found.tools:
            return []
        flags = [f"-XX:SharedArchiveFile={found.tools['class_archive']}", "-Xlog:cds=off"]
        return [f"{self.jvm_prefix}{flag}" for flag in flags]

    def class_archive(self, found: Found) -> str | None:
        """The compiler's classes archived for the JVM to map (CDS, `-XX:SharedArchiveFile`),
        made now by one unconfined build of `sample` unless already there: a build then
        loads and verifies none of them (docs/code.md has the figures). Kept
        in `CLASS_ARCHIVES` under a name that hashes the JVM, the jars and the command, as an
        archive serves only the class path it was made with; None where it cannot be made
        (the builds then run without)."""
        import hashlib
        import shutil
        import subprocess
        import tempfile

        source = self.source_name(memoryview(self.sample.encode()))
        command = self.build(found, "", source, None)
        # the command without its sources: Kotlin's programs and scripts share one archive
        key = [arg for arg in command.argv if arg != source and arg not in command.files]
        for path in self.archive_inputs(found):
            info = os.stat(path)
            key += [os.path.realpath(path), str(info.st_size), str(info.st_mtime_ns)]
        digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]
        archive = os.path.join(CLASS_ARCHIVES, f"{self.launcher}-{digest}.jsa")
        if os.path.isfile(archive):
            return archive
        if os.path.exists(f"{archive}.failed"):  # tried once: not again in every worker
            return None
        try:
            os.makedirs(CLASS_ARCHIVES, 0o755, exist_ok=True)
            work = tempfile.mkdtemp(prefix=f"{self.language}-archive-", dir=CLASS_ARCHIVES)
        except OSError:
            return None
        try:
            partial = os.path.join(work, "classes.jsa")
            files = {source: self.sample, **command.files}
            for name, text in files.items():
                with open(os.path.join(work, name), "w") as f:
                    f.write(text)
            os.mkdir(os.path.join(work, BUILD_HOME))
            dump = f"{self.jvm_prefix}-XX:ArchiveClassesAtExit={partial}"
            argv = [command.argv[0], dump, *command.argv[1:]]
            home = os.path.join(work, BUILD_HOME)
            env = {k: v.replace("{home}", home) for k, v in command.env.items()}
            subprocess.run(
                argv, cwd=work, env=env | {"HOME": home}, capture_output=True, timeout=120
            )
            if not os.path.isfile(partial):
                with open(f"{archive}.failed", "w") as f:
                    f.write(f"{argv}\n")
                return None
            os.chmod(partial, 0o644)
            os.replace(partial, archive)
            return archive
        except (OSError, subprocess.SubprocessError):
            return None
        finally:
            shutil.rmtree(work, ignore_errors=True)


class Java(ArchivedCompiler):
    """javac, then the JVM on the classes (serial GC, one JIT thread, the heap at the limit,
    assertions on), with the libraries of `JAVA_LIBRARIES` found here."""

    language = "java"
    tools = ("javac", "java")
    outputs = ("*.class",)
    memory_errors = (b"java.lang.OutOfMemoryError",)
    runtime_mb = 512
    syscalls = ("socketpair",)  # java.nio's FileDispatcherImpl makes one at start
    launcher = "javac"
    jvm_prefix = "-J"
    sample = (
        "import java.util.*;\n"
        "public class Main {\n"
        "  public static void main(String[] a) {\n"
        "    Scanner in = new Scanner(System.in);\n"
        "    List<Long> l = new ArrayList<>(List.of(in.nextLong()));\n"
        "    System.out.println(l.stream().map(x -> x + 1).count());\n"
        "  }\n"
        "}\n"
    )

    def discover(self, path: str) -> Found | str:
        found = super().discover(path)
        if isinstance(found, str):
            return found
        reads = _jdk_reads(found.tools["java"])
        tools = dict(found.tools)
        for jar in JAVA_LIBRARIES:
            if os.path.isfile(jar):
                tools[f"classpath:{os.path.basename(jar)}"] = os.path.realpath(jar)
                reads += [] if _under_system(jar) else [os.path.dirname(os.path.realpath(jar))]
        return self.archived(Found(tools, reads))

    def archive_inputs(self, found: Found) -> list[str]:
        """javac, and the JDK's class image (`lib/modules`, JDK 9+) that holds its classes."""
        image = os.path.join(
            os.path.dirname(os.path.dirname(found.tools["javac"])), "lib", "modules"
        )
        return [found.tools["javac"], *([image] if os.path.isfile(image) else [])]

    @staticmethod
    def classpath(found: Found, directory: str) -> str:
        """`directory` (the program's classes) and the libraries found (`JAVA_LIBRARIES`)."""
        jars = [path for name, path in sorted(found.tools.items()) if name.startswith("classpath:")]
        return ":".join([directory, *jars])

    def source_name(self, source: memoryview) -> str:
        public = _PUBLIC_CLASS.search(source)
        name = public.group(1).decode("utf-8", "replace") if public else "Main"
        return f"{name}.java"

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        # argv[0] the JDK's own path: the launcher finds its home from /proc/self/exe, else
        # from argv[0] (by PATH, through /etc/alternatives, which runs may not read)
        argv = [found.tools["javac"], *(f"-J{flag}" for flag in _JVM), "-J-Xmx256m"]
        argv += [*self.archive_flags(found), "-proc:none", "-encoding", "UTF-8"]
        argv += ["-cp", self.classpath(found, "."), "-d", ".", source_name]
        return Command(found.tools["javac"], argv, {"PATH": BUILD_PATH, "MALLOC_ARENA_MAX": "1"})

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        main = source_name.removesuffix(".java")
        # -ea: assertions on, as SandboxFusion runs Java (MultiPL-E's tests are asserts)
        argv = [found.tools["java"], *_JVM, f"-Xmx{memory_mb}m", "-Xss16m", "-ea"]
        argv += ["-cp", self.classpath(found, build_dir), main]
        return Command(found.tools["java"], argv, {"MALLOC_ARENA_MAX": "1"})

    def version(self, tools: Mapping[str, str]) -> str:
        """The JDK's `release` file's version (`javac -version` would start a JVM)."""
        home = os.path.dirname(os.path.dirname(tools["javac"]))
        with open(os.path.join(home, "release")) as f:
            fields = dict(line.strip().partition("=")[::2] for line in f if "=" in line)
        return f"javac {fields['JAVA_VERSION'].strip(chr(34))}"


_OBJECT = re.compile(rb"(?<![\w$])object\s+([A-Za-z_]\w*)")
"""A Scala source's first `object`, whose name the run starts (SandboxFusion's `scala
<name>` takes the same, the first `object` in the text)."""


class JvmLanguage(ArchivedCompiler):
    """A language whose compiler runs on the JVM (Scala, Kotlin): the compiler's main class
    on the JDK's `java` with its jars, not its launcher (a shell script: runs start no
    shell, and a build's configuration is all on its command line), then the JVM on the
    classes with the language's runtime jars, as Java's runs (its flags, heap, reads)."""

    tools = ("java",)
    outputs = ("*.class",)
    memory_errors = (b"java.lang.OutOfMemoryError",)
    runtime_mb = 512
    syscalls = ("socketpair",)  # java.nio's FileDispatcherImpl makes one at start
    launcher = ""
    """The compiler's launcher script, looked up in PATH: its home's `lib` holds the jars
    (and its name names the archive)."""
    compiler_jars: tuple[str, ...] = ()
    runtime_jars: tuple[str, ...] = ()
    version_jar = ""
    """The jar whose manifest (`Implementation-Version`) or properties name the version."""

    def discover(self, path: str) -> Found | str:
        java, script = which("java", path), which(self.launcher, path)
        if java is None or script is None:
            return f"{'java' if java is None else self.launcher} not found in the toolchain path"
        home = os.path.dirname(os.path.dirname(os.path.realpath(script)))
        # the jars by their names in lib/, not their real paths: the compiler's manifest
        # names its own dependencies relative to where it is (kotlin-compiler.jar's)
        tools = {"java": os.path.realpath(java), "home": home}
        reads = _jdk_reads(tools["java"])
        for jar in (*self.compiler_jars, *self.runtime_jars):
            where = os.path.join(home, "lib", jar)
            if not os.path.isfile(where):
                return f"{self.launcher}'s {jar} not found in {os.path.dirname(where)}"
            tools[f"jar:{jar}"] = where
            reads += [d for d in (home, os.path.dirname(os.path.realpath(where))) if d not in reads]
        return self.archived(Found(tools, [d for d in reads if not _under_system(d)]))

    def archive_inputs(self, found: Found) -> list[str]:
        return [found.tools["java"], *(found.tools[f"jar:{j}"] for j in self.compiler_jars)]

    @staticmethod
    def jars(found: Found, names: Sequence[str]) -> str:
        return ":".join(found.tools[f"jar:{name}"] for name in names)

    def compiler(self, found: Found) -> list[str]:
        """The JVM that runs the compiler: its own path as argv[0] (`Java.build`), a heap
        of 384 MiB, temporary files in the build's home (not /tmp, which a build may not
        write), its classes mapped from their archive where there is one."""
        argv = [found.tools["java"], *_JVM, "-Xmx384m", f"-Djava.io.tmpdir={BUILD_HOME}"]
        return argv + self.archive_flags(found)

    def run_classes(self, found: Found, build_dir: str, main: str, memory_mb: int) -> Command:
        """The JVM on the program's classes and the runtime jars, as Java's runs."""
        argv = [found.tools["java"], *_JVM, f"-Xmx{memory_mb}m", "-Xss16m"]
        argv += ["-cp", ":".join([build_dir, self.jars(found, self.runtime_jars)]), main]
        return Command(found.tools["java"], argv, {"MALLOC_ARENA_MAX": "1"})

    def version(self, tools: Mapping[str, str]) -> str:
        """Read from the compiler's jar (its compiler would start a JVM)."""
        name, data = jar_member(
            tools[f"jar:{self.version_jar}"], ("compiler.properties", "META-INF/MANIFEST.MF")
        )
        key = "version.number=" if name == "compiler.properties" else "Implementation-Version: "
        text = data.decode()
        number = next(line[len(key) :] for line in text.splitlines() if line.startswith(key))
        return f"{self.launcher} {number.strip()}"


_END_OF_DIRECTORY = b"PK\x05\x06"
_DIRECTORY_ENTRY = struct.Struct("<4s6H3I5H2I")
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


def jar_member(path: str, names: Sequence[str]) -> tuple[str, bytes]:
    """The first of `names` that the zip archive (a jar) at `path` holds, and its bytes;
    KeyError when it holds none.

    Found by one search of the archive's central directory, not by reading every entry
    into an object as `zipfile` does: kotlin-compiler.jar holds 23,000 (0.13 CPU-s, twice
    at each start-up check: Kotlin's and its scripts'). An archive this does not read (ZIP64,
    encrypted, a compression other than deflate) is read by `zipfile`.
    """
    import zlib

    with open(path, "rb") as f:
        try:
            found = _from_directory(f, names)
        except (struct.error, ValueError, zlib.error):
            found = None
    if found is not None:
        return found
    import zipfile

    with zipfile.ZipFile(path) as jar:
        held = set(jar.namelist())
        for name in names:
            if name in held:
                return name, jar.read(name)
    raise KeyError(f"none of {', '.join(names)} in {path}")


def _from_directory(f: BinaryIO, names: Sequence[str]) -> tuple[str, bytes] | None:
    """`jar_member` read by hand, None where `zipfile` must read it."""
    size = f.seek(0, os.SEEK_END)
    f.seek(max(0, size - 22 - 0xFFFF))  # the end record, after which a comment of at most 64 KiB
    tail = f.read()
    end = tail.rfind(_END_OF_DIRECTORY)
    if end < 0:
        return None
    count, length, offset = struct.unpack_from("<HII", tail, end + 10)
    if count == 0xFFFF or 0xFFFFFFFF in (length, offset):  # ZIP64
        return None
    f.seek(offset)
    directory = f.read(length)
    if not directory.startswith(b"PK\x01\x02"):
        return None
    for name in names:
        wanted = name.encode()
        at = directory.find(wanted, _DIRECTORY_ENTRY.size)
        while at >= 0:
            entry = _DIRECTORY_ENTRY.unpack_from(directory, at - _DIRECTORY_ENTRY.size)
            if entry[0] == b"PK\x01\x02" and entry[10] == len(wanted):
                return _member(f, name, entry)
            at = directory.find(wanted, at + 1)
    return None


def _member(f: BinaryIO, name: str, entry: tuple[Any, ...]) -> tuple[str, bytes] | None:
    """The bytes of the member a central directory `entry` describes."""
    import zlib

    flags, method, crc, packed, local = entry[3], entry[4], entry[7], entry[8], entry[16]
    if flags & 1 or method not in (0, 8):  # encrypted, or not deflated
        return None
    f.seek(local)
    header = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
    if header[0] != b"PK\x03\x04":
        return None
    f.seek(local + _LOCAL_HEADER.size + header[9] + header[10])
    data = f.read(packed)
    data = zlib.decompress(data, -15) if method == 8 else data
    return (name, data) if zlib.crc32(data) == crc else None


class Scala(JvmLanguage):
    """scalac (Debian's Scala 2.11) on the JVM, then the JVM on the first `object` of the
    source, as SandboxFusion's `scala <object>` runs it (Scala's `assert` is its own, on
    without `-ea`)."""

    language = "scala"
    launcher = "scalac"
    compiler_jars = ("scala-compiler.jar", "scala-reflect.jar", "scala-xml.jar")
    runtime_jars = ("scala-library.jar",)
    version_jar = "scala-compiler.jar"
    sample = "object Main {\n  def main(a: Array[String]): Unit = println(List(1).map(_ + 1))\n}\n"

    def source_name(self, source: memoryview) -> str:
        named = _OBJECT.search(source)
        return f"{named.group(1).decode() if named else 'Main'}.scala"

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        classpath = self.jars(found, (*self.compiler_jars, *self.runtime_jars))
        argv = [*self.compiler(found), "-cp", classpath, "scala.tools.nsc.Main"]
        # classes for Java 8's JVM, not 2.11's default 6: a call of a static method of a Java
        # interface (`java.util.List.of`) fails to link in a class file before 8's
        argv += ["-usejavacp", "-target:jvm-1.8", "-encoding", "UTF-8", "-d", ".", source_name]
        return Command(found.tools["java"], argv, {"PATH": BUILD_PATH, "MALLOC_ARENA_MAX": "1"})

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        return self.run_classes(found, build_dir, source_name.removesuffix(".scala"), memory_mb)


KOTLIN_LAUNCHER = "SandboxScript.kt"
"""A Kotlin file of the sandbox's own, built beside the script: its `main` makes the
script's object (a script compiles to a class, `Main` for `main.kts`, whose constructor
runs it), rethrowing what the script threw, so that the JVM runs a script with no
`kotlin` launcher (a shell script) and no compiler at run time."""
_KOTLIN_LAUNCHER = """\
fun main(args: Array<String>) {
    val script = Class.forName("Main").getConstructor(Array<String>::class.java)
    try {
        script.newInstance(args)
    } catch (e: java.lang.reflect.InvocationTargetException) {
        throw e.cause ?: e
    }
}
"""


class Kotlin(JvmLanguage):
    """Kotlin by Debian's kotlinc 1.3: `main.kt` compiled to classes, then the JVM on its
    `main` (`MainKt`), without `-ea`, as `kotlin` runs a program."""

    language = "kotlin"
    launcher = "kotlinc"
    source_file = "main.kt"
    compiler_jars = ("kotlin-preloader.jar", "kotlin-compiler.jar")
    runtime_jars: tuple[str, ...] = ("kotlin-stdlib.jar",)
    version_jar = "kotlin-compiler.jar"
    sample = "fun main() {\n    println(listOf(1).map { it + 1 })\n}\n"
    main_class = "MainKt"
    sources: tuple[str, ...] = ()
    """Files of the sandbox's own compiled beside the program: name -> text."""

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = [*self.compiler(found), f"-Dkotlin.home={found.tools['home']}"]
        argv += ["-cp", self.jars(found, ["kotlin-preloader.jar"])]
        argv += ["org.jetbrains.kotlin.preloading.Preloader"]
        argv += ["-cp", self.jars(found, ["kotlin-compiler.jar"])]
        argv += ["org.jetbrains.kotlin.cli.jvm.K2JVMCompiler", "-no-reflect", "-d", "."]
        argv += ["-jvm-target", "1.8"]  # 1.3's default is 6, which refuses Java 8's API
        argv += [source_name, *self.sources]
        env = {"PATH": BUILD_PATH, "MALLOC_ARENA_MAX": "1"}
        files = {name: _KOTLIN_SOURCES[name] for name in self.sources}
        return Command(found.tools["java"], argv, env, files=files)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        return self.run_classes(found, build_dir, self.main_class, memory_mb)


class KotlinScript(Kotlin):
    """A Kotlin script, as SandboxFusion's `kotlin_script` runs it (`kotlin main.kts`):
    compiled to a class, then run by the JVM (`KOTLIN_LAUNCHER`)."""

    language = "kotlin_script"
    source_file = "main.kts"
    reports_build = False  # `kotlin main.kts` compiles as it runs: SandboxFusion has no step
    runtime_jars = ("kotlin-stdlib.jar", "kotlin-script-runtime.jar")
    main_class = "SandboxScriptKt"
    sources = (KOTLIN_LAUNCHER,)
    sample = "println(listOf(1).map { it + 1 })\n"


_KOTLIN_SOURCES = {KOTLIN_LAUNCHER: _KOTLIN_LAUNCHER}


CSHARP_ASSERTS = "SandboxAsserts.cs"
"""A C# file of the sandbox's own, built into the program: a trace listener that ends the
program when a `Debug.Assert` fails, as .NET does (Mono's default listener prints nothing
and goes on); the program's `main.exe.config` (`_CSHARP_CONFIG`) puts it in place of
Mono's."""
_CSHARP_ASSERTS = """\
namespace RewardServiceSandbox
{
    public sealed class FailingAssertListener : System.Diagnostics.TraceListener
    {
        public override void Write(string message) { System.Console.Error.Write(message); }
        public override void WriteLine(string message) { System.Console.Error.WriteLine(message); }
        public override void Fail(string message, string detail)
        {
            System.Console.Out.Flush();
            System.Console.Error.WriteLine("Process terminated. Assertion failed.");
            System.Console.Error.WriteLine(message);
            if (!string.IsNullOrEmpty(detail)) System.Console.Error.WriteLine(detail);
            System.Console.Error.WriteLine(System.Environment.StackTrace);
            System.Console.Error.Flush();
            System.Environment.Exit(134);
        }
    }
}
"""
_CSHARP_CONFIG = """\
<?xml version="1.0" encoding="utf-8"?>
<configuration>
  <system.diagnostics>
    <trace>
      <listeners>
        <remove name="Default" />
        <add name="sandbox" type="RewardServiceSandbox.FailingAssertListener, main" />
      </listeners>
    </trace>
  </system.diagnostics>
</configuration>
"""
_MONO_ENV = {"MONO_DISABLE_SHARED_AREA": "1", "MONO_ENV_OPTIONS": ""}
"""Mono's shared area (performance counters in /dev/shm) off: a run writes only its own
directory."""


CSHARP_USINGS = (
    "System",
    "System.Collections.Generic",
    "System.IO",
    "System.Linq",
    "System.Threading",
    "System.Threading.Tasks",
)
"""The namespaces .NET's SDK imports into every file of a `dotnet new console` project (its
implicit usings, on in the template SandboxFusion builds C# with), but `System.Net.Http`:
Mono's assembly of it is not in the image (a run has no network to use it on)."""
_CSHARP_PREFIX = "".join(f"using {name}; " for name in CSHARP_USINGS) + "\n#line 1\n"
"""The implicit usings on one line before the source, then `#line 1`: the compiler's
messages name the program's own lines. C# 7 has no `global using`, so they go in its file."""


class CSharp(Toolchain):
    """C# by Mono: `mcs` (C# 7, .NET Framework 4.x's library, `DEBUG` and `TRACE` defined as
    in `dotnet run`'s Debug build) run as `mono mcs.exe` (`mcs` is a shell script), then
    `mono main.exe`; `Debug.Assert` fails the run (`CSHARP_ASSERTS`); the source is compiled
    with .NET's implicit usings (`CSHARP_USINGS`; `-nowarn:105`: a `using` the program
    repeats is no warning). Mono asks glibc for
    its main thread's stack as it starts, which needs /proc, and sets its threads'
    scheduling, which runs may not: both preload the sandbox's own answers (`preload`)."""

    language = "csharp"
    reports_build = False  # `dotnet run` builds as it runs: SandboxFusion has no build step
    tools = ("mono",)
    source_file = "Program.cs"
    outputs = ("main.exe", "main.exe.config")
    memory_errors = (b"System.OutOfMemoryException",)
    runtime_mb = 256
    config_dirs = ("/etc/mono",)

    def discover(self, path: str) -> Found | str:
        mono, script = which("mono", path), which("mcs", path)
        if mono is None or script is None:
            return f"{'mono' if mono is None else 'mcs'} not found in the toolchain path"
        try:
            with open(os.path.realpath(script), "rb") as f:
                words = f.read(4096).decode(errors="replace").split()
        except OSError as e:
            return f"mcs cannot be read: {e}"
        compiler = next((w for w in words if w.startswith("/") and w.endswith("mcs.exe")), "")
        if not os.path.isfile(compiler):
            return f"mcs.exe not found (mcs at {script} names none)"
        from reward_service.sandbox import preload

        try:
            shim = preload.ensure(BUILD_PATH)
        except OSError as e:
            return f"mono needs the sandbox's preloaded library, not built: {e}"
        tools = {"mono": os.path.realpath(mono), "mcs.exe": os.path.realpath(compiler)}
        tools["preload"] = shim
        reads = [d for d in self.config_dirs if os.path.isdir(d)] + [os.path.dirname(shim)]
        return Found(tools, reads)

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = ["mono", found.tools["mcs.exe"], "-d:DEBUG", "-d:TRACE", "-r:System.Numerics.dll"]
        argv += ["-nowarn:105", "-out:main.exe", source_name, CSHARP_ASSERTS]
        files = {CSHARP_ASSERTS: _CSHARP_ASSERTS, "main.exe.config": _CSHARP_CONFIG}
        env = {"PATH": BUILD_PATH, "LD_PRELOAD": found.tools["preload"], **_MONO_ENV}
        return Command(found.tools["mono"], argv, env, files=files, source_prefix=_CSHARP_PREFIX)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        env = {**_MONO_ENV, "MONO_GC_PARAMS": f"max-heap-size={memory_mb}m"}
        env["LD_PRELOAD"] = found.tools["preload"]
        argv = ["mono", os.path.join(build_dir, "main.exe")]
        return Command(found.tools["mono"], argv, env | UTF8_LOCALE)

    def version(self, tools: Mapping[str, str]) -> str:
        done = run_tool([tools["mono"], "--version"], {"PATH": BUILD_PATH})
        return done.stdout.decode(errors="replace").strip().splitlines()[0]


NODE_LIBRARIES = ("/usr/share/nodejs", "/usr/lib/nodejs")
"""Where Debian puts Node modules (`node-lodash`: lodash, which SandboxFusion's Node has):
a run's `NODE_PATH` where they exist, as a node from elsewhere (NodeSource's) looks there
for none."""


class JavaScript(Toolchain):
    """Node.js, no build: node runs the file, as SandboxFusion runs it (a syntax error ends
    the run, exit 1); the modules given beside it (`Program.files`) are in the run's
    directory, where its `require` finds them, and the system's (`NODE_LIBRARIES`)."""

    language = "javascript"
    tools = ("node",)
    source_file = "main.js"
    builds = False
    memory_errors = (b"JavaScript heap out of memory", b"Allocation failed")
    runtime_mb = 768

    def discover(self, path: str) -> Found | str:
        found = super().discover(path)
        libraries = [d for d in NODE_LIBRARIES if os.path.isdir(d)]
        if isinstance(found, str) or not libraries:
            return found
        return Found({**found.tools, "node_path": ":".join(libraries)}, found.reads)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        argv = ["node", f"--max-old-space-size={memory_mb}", "--stack-size=65500"]
        argv += ["--v8-pool-size=1", os.path.join(build_dir, source_name)]
        env = {**_NODE_ENV, "UV_THREADPOOL_SIZE": "1"}
        if "node_path" in found.tools:
            env["NODE_PATH"] = found.tools["node_path"]
        return Command(found.tools["node"], argv, env)


_NODE_ENV = {"OPENSSL_CONF": "/dev/null"}
"""Node reads OpenSSL's configuration at start and fails where it exists but may not be
read (landlock without a mount namespace): an empty one instead."""


TYPESCRIPT_LIBRARIES = (
    "/usr/share/nodejs/typescript",
    "/usr/lib/node_modules/typescript",
    "/usr/local/lib/node_modules/typescript",
)
"""Where TypeScript's compiler library is looked for (Debian's `node-typescript`, npm's
global installs), after `lib/node_modules/typescript` beside the node found."""
_TRANSPILE = """\
const fs = require("fs");
const ts = require(process.env.TYPESCRIPT);
const options = {target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS,
  esModuleInterop: true};
const host = {getCanonicalFileName: (f) => f, getCurrentDirectory: () => ".",
  getNewLine: () => "\\n"};
for (const name of fs.readdirSync(".")) {
  if (!name.endsWith(".ts") || name.endsWith(".d.ts")) continue;
  const out = ts.transpileModule(fs.readFileSync(name, "utf8"),
    {reportDiagnostics: true, fileName: name, compilerOptions: options});
  const errors = (out.diagnostics || []).filter((d) => d.category === 1);
  const js = errors.length
    ? `process.stderr.write(${JSON.stringify(ts.formatDiagnostics(errors, host))});
process.exit(1);\\n`
    : out.outputText;
  fs.writeFileSync(name.slice(0, -3) + ".js", js);
}
"""
"""The build of a TypeScript program: each `.ts` file of its directory transpiled to
JavaScript, types stripped and not checked, as SandboxFusion's `tsx` runs it; a file with
a syntax error becomes one that prints the errors and exits 1, so that the error is the
run's failure there as in SandboxFusion."""


class TypeScript(JavaScript):
    """TypeScript: transpiled once per program by the compiler's library on node (no type
    check, as `tsx`), then node runs the JavaScript as for `javascript`; `import` of a
    `.ts` module given among the files finds its transpiled `.js` beside `main.js`."""

    language = "typescript"
    tools = ("node",)
    source_file = "main.ts"
    builds = True
    reports_build = False
    outputs = ("*.js",)

    def discover(self, path: str) -> Found | str:
        node = which("node", path)
        if node is None:
            return "node not found in the toolchain path"
        node = os.path.realpath(node)
        beside = os.path.join(os.path.dirname(os.path.dirname(node)), "lib", "node_modules")
        for library in (os.path.join(beside, "typescript"), *TYPESCRIPT_LIBRARIES):
            if os.path.isfile(os.path.join(library, "lib", "typescript.js")):
                library = os.path.realpath(library)
                reads = [] if _under_system(library) else [library]
                tools = {"node": node, "typescript": library}
                libraries = [d for d in NODE_LIBRARIES if os.path.isdir(d)]
                tools |= {"node_path": ":".join(libraries)} if libraries else {}
                return Found(tools, reads)
        return "typescript's library not found (Debian's node-typescript, npm's typescript)"

    def build(self, found: Found, dialect: str, source_name: str, pch: str | None) -> Command:
        argv = ["node", "--max-old-space-size=256", "--v8-pool-size=1", "-e", _TRANSPILE]
        env = {"PATH": BUILD_PATH, "TYPESCRIPT": found.tools["typescript"], **_NODE_ENV}
        return Command(found.tools["node"], argv, env | {"UV_THREADPOOL_SIZE": "1"})

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        return super().launch(found, build_dir, "main.js", memory_mb)

    def version(self, tools: Mapping[str, str]) -> str:
        import json

        with open(os.path.join(tools["typescript"], "package.json")) as f:
            typescript = json.load(f)["version"]
        done = run_tool([tools["node"], "--version"])
        return f"typescript {typescript} on node {done.stdout.decode().strip()}"


UTF8_LOCALE = {"LANG": "C.UTF-8"}
"""An interpreter's locale: UTF-8 text (Ruby's strings, R's), from glibc's own C.UTF-8
(under /usr, no locale data to install); the zygote's environment has none."""


class Interpreter(Toolchain):
    """A runtime that reads the program's file, no build: its command on the source as
    SandboxFusion runs it (`ruby main.rb`), so a syntax error is the run's failure (the
    runtime's exit status, its message in stderr). Each run execs the runtime once under
    the `exec` filter, as a JavaScript run execs node."""

    builds = False
    flags: tuple[str, ...] = ()
    """The runtime's options, before the script's name."""
    names: tuple[str, ...] = ()
    """The names the runtime is looked up by, in order (Debian's `lua5.4` has a `lua`
    alternative only where one was chosen); by default `tools`."""
    config_dirs: tuple[str, ...] = ()
    """Configuration it reads at start outside the system's directories (PHP's `/etc/php`):
    read paths of every run where they exist."""
    version_flags: tuple[str, ...] = ("--version",)

    def discover(self, path: str) -> Found | str:
        for name in self.names or self.tools:
            where = which(name, path)
            if where is not None:
                reads = [d for d in self.config_dirs if os.path.isdir(d)]
                return Found({self.tools[0]: os.path.realpath(where)}, reads)
        return f"{' or '.join(self.names or self.tools)} not found in the toolchain path"

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        tool = self.tools[0]
        argv = [tool, *self.flags, os.path.join(build_dir, source_name)]
        return Command(found.tools[tool], argv, dict(UTF8_LOCALE))

    def version(self, tools: Mapping[str, str]) -> str:
        """The first line the runtime prints of its version (Perl's starts blank)."""
        done = run_tool([tools[self.tools[0]], *self.version_flags], {"PATH": BUILD_PATH})
        text = (done.stdout or done.stderr).decode(errors="replace")
        return next((line.strip() for line in text.splitlines() if line.strip()), "")


class Ruby(Interpreter):
    """`ruby main.rb`, with RubyGems as SandboxFusion's (a `require` of a bundled gem works)."""

    language = "ruby"
    tools = ("ruby",)
    source_file = "main.rb"
    memory_errors = (b"NoMemoryError", b"failed to allocate memory")
    runtime_mb = 128  # ruby 3.1 maps 75 MB before the program's first line


class Php(Interpreter):
    """`php -f main.php`, the system's `php.ini` and its extensions (`/etc/php`)."""

    language = "php"
    tools = ("php",)
    flags = ("-f",)
    source_file = "main.php"
    config_dirs = ("/etc/php",)
    memory_errors = (b"Allowed memory size of", b"Out of memory")
    runtime_mb = 128  # php 8.2 maps 67 MB (ICU's data among it) before the program starts


class Perl(Interpreter):
    """`perl main.pl`; Debian's `@INC` starts at `/etc/perl`."""

    language = "perl"
    tools = ("perl",)
    source_file = "main.pl"
    config_dirs = ("/etc/perl",)
    memory_errors = (b"Out of memory",)
    runtime_mb = 16  # perl 5.36 maps 8 MB at start


class Lua(Interpreter):
    """`lua main.lua`: `lua`, else Debian's versioned names, newest first."""

    language = "lua"
    tools = ("lua",)
    names = ("lua", "lua5.4", "lua5.3", "lua5.2", "lua5.1")
    source_file = "main.lua"
    memory_errors = (b"not enough memory",)
    version_flags = ("-v",)


class Racket(Interpreter):
    """`racket main.rkt`, as SandboxFusion runs it (rackunit's failed checks print to stderr
    and exit 0 there too); reads `/etc/racket` (its installation's configuration). Racket
    finds its boot files in its own executable through `/proc/self/exe`: where a zygote
    has no /proc, the sandbox's preloaded library (`preload`) answers that link."""

    language = "racket"
    tools = ("racket",)
    source_file = "main.rkt"
    config_dirs = ("/etc/racket",)
    memory_errors = (b"out of memory",)
    runtime_mb = 256

    def discover(self, path: str) -> Found | str:
        found = super().discover(path)
        if isinstance(found, str):
            return found
        from reward_service.sandbox import preload

        try:
            library = preload.ensure(BUILD_PATH)
        except OSError as e:
            return f"racket needs the sandbox's preloaded library, not built: {e}"
        reads = [*found.reads, os.path.dirname(library)]
        return Found({**found.tools, "preload": library}, reads)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        command = super().launch(found, build_dir, source_name, memory_mb)
        env = {"LD_PRELOAD": found.tools["preload"], "SANDBOX_SELF_EXE": found.tools["racket"]}
        return Command(command.executable, command.argv, command.env | env)


_R_SCRIPT_DIRS = ("R_HOME_DIR", "R_SHARE_DIR", "R_INCLUDE_DIR", "R_DOC_DIR")
R_PROFILE = ".sandbox-Rprofile.R"
"""R's site profile in a run's directory (`R_PROFILE`): `_R_SITE`."""
_R_SITE = """\
local({
    which <- function(names) {
        dirs <- strsplit(Sys.getenv("PATH"), ":", fixed = TRUE)[[1L]]
        found <- vapply(names, function(name) {
            if (is.na(name)) return(NA_character_)
            for (dir in dirs[nzchar(dirs)]) {
                path <- file.path(dir, name)
                if (file.exists(path) && !dir.exists(path) && file.access(path, 1L) == 0L)
                    return(path)
            }
            ""
        }, "", USE.NAMES = FALSE)
        names(found) <- names
        found
    }
    base <- baseenv()
    unlockBinding("Sys.which", base)
    assign("Sys.which", which, envir = base)
    lockBinding("Sys.which", base)
    site <- file.path(R.home("etc"), "Rprofile.site")
    if (file.exists(site)) sys.source(site, envir = base)
})
"""
"""R's own `Sys.which` runs `which` in a shell, and `utils` and `stats` call it as they
load: where no run starts a process, both failed to load (a program's `median` was not
found). This site profile, run before the default packages are attached, makes it look
along PATH itself (a run has none: every name is ""), then runs the system's site profile."""
_ALTERNATIVE_LIBRARIES = ("libblas.so.3", "liblapack.so.3")
"""Libraries R links that Debian installs as alternatives: the loader reaches them through
`/etc/alternatives`, which runs may not read."""


def _alternative_dirs() -> list[str]:
    """The directories where `_ALTERNATIVE_LIBRARIES` really are, for a run's library path."""
    try:
        multiarch = [f"/usr/lib/{n}" for n in sorted(os.listdir("/usr/lib")) if "-linux-" in n]
    except OSError:
        return []
    found: list[str] = []
    for directory in (*multiarch, "/usr/lib64", "/usr/lib"):
        for library in _ALTERNATIVE_LIBRARIES:
            real = os.path.dirname(os.path.realpath(os.path.join(directory, library)))
            if os.path.isdir(real) and real != directory and real not in found:
                found.append(real)
    return found


class R(Interpreter):
    """`Rscript main.R` without its two execs: `Rscript` execs the `R` shell script, which
    sets R's directories and execs R's binary (`lib/R/bin/exec/R`), so a run, which execs
    once and starts no shell, execs that binary itself with what the script would set
    (read from the script at discovery) and Rscript's options."""

    language = "R"
    tools = ("R",)
    names = ("R",)
    source_file = "main.R"
    config_dirs = ("/etc/R",)
    memory_errors = (b"cannot allocate vector", b"cannot allocate memory")
    runtime_mb = 192  # R 4.2 maps 103 MB before the program's first line
    writes = True  # its session directory, in TMPDIR (the run's directory)

    def discover(self, path: str) -> Found | str:
        script = which("R", path)
        if script is None:
            return "R not found in the toolchain path"
        try:
            with open(os.path.realpath(script), "rb") as f:
                text = f.read(64 * 1024).decode(errors="replace")
        except OSError as e:
            return f"R's script cannot be read: {e}"
        dirs: dict[str, str] = {}
        for line in text.splitlines():
            name, equals, value = line.strip().partition("=")
            if equals and name in _R_SCRIPT_DIRS and name not in dirs and value.startswith("/"):
                dirs[name] = value
        home = dirs.get("R_HOME_DIR", "")
        binary = os.path.join(home, "bin", "exec", "R")
        if not os.access(binary, os.X_OK):
            return (
                f"no R binary at {binary or 'R_HOME/bin/exec/R'} (R's script names no R_HOME_DIR)"
            )
        tools = {"R": os.path.realpath(binary), "script": os.path.realpath(script)}
        tools |= {name.removesuffix("_DIR").lower(): value for name, value in dirs.items()}
        tools["library_path"] = ":".join([os.path.join(home, "lib"), *_alternative_dirs()])
        reads = [d for d in self.config_dirs if os.path.isdir(d)]
        reads += [d for d in dirs.values() if os.path.isdir(d) and not _under_system(d)]
        return Found(tools, reads)

    def launch(self, found: Found, build_dir: str, source_name: str, memory_mb: int) -> Command:
        home = found.tools["r_home"]
        env = {"R_HOME": home, "R_ARCH": "", "LD_LIBRARY_PATH": found.tools["library_path"]}
        env["R_PROFILE"] = "{workdir}/" + R_PROFILE
        for name in ("R_SHARE_DIR", "R_INCLUDE_DIR", "R_DOC_DIR"):
            env[name] = found.tools.get(name.lower(), os.path.join(home, name[2:-4].lower()))
        argv = ["R", "--no-echo", "--no-restore", f"--file={os.path.join(build_dir, source_name)}"]
        return Command(found.tools["R"], argv, env | UTF8_LOCALE, files={R_PROFILE: _R_SITE})

    def version(self, tools: Mapping[str, str]) -> str:
        done = run_tool([tools["script"], "--version"], {"PATH": BUILD_PATH})
        return done.stdout.decode(errors="replace").strip().splitlines()[0]


TOOLCHAINS: dict[str, Toolchain] = {
    toolchain.language: toolchain
    for toolchain in (
        *(Cpp(), Java(), Go(), JavaScript(), Rust()),
        *(C(), Ruby(), Php(), Perl(), Lua(), TypeScript(), R(), Verilog()),
        *(CSharp(), Kotlin(), KotlinScript(), Scala(), D(), DUnittest(), Racket()),
    )
}
"""Language (a runner's name, `Program.language`) -> its toolchain."""


def run_tool(
    argv: list[str],
    env: Mapping[str, str] | None = None,
    timeout_s: float = _PROBE_TIMEOUT_S,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """A tool of the service's run unconfined (a version, a sysroot, the precompiled
    header: in a worker or the start-up check), its output captured; OSError when it
    could not run, timed out or failed. `subprocess` is imported here, never in the
    zygote: with it comes `threading`, whose at-fork hook copied some 100 of the
    zygote's pages in every run (a fifth of a run's page faults)."""
    import subprocess

    try:
        return subprocess.run(
            argv, input=stdin, capture_output=True, timeout=timeout_s, check=True, env=env
        )
    except subprocess.SubprocessError as e:
        raise OSError(str(e)) from e


def _under_system(path: str) -> bool:
    return any(path == d or path.startswith(d + "/") for d in ("/usr", "/bin", "/lib"))


def discover(
    path: str, languages: Sequence[str] = tuple(TOOLCHAINS), versions: bool = False
) -> dict[str, Found | str]:
    """Each language's toolchain found in `path` (a PATH string), or why not; with `versions`
    each compiler is also run for its version (a JVM start for javac: the start-up check's)."""
    found = {language: TOOLCHAINS[language].discover(path) for language in languages}
    if versions:
        for language, tools in found.items():
            if isinstance(tools, Found):
                found[language] = _with_version(TOOLCHAINS[language], tools)
    return found


def _with_version(toolchain: Toolchain, found: Found) -> Found | str:
    try:
        return Found(found.tools, found.reads, toolchain.version(found.tools))
    except (OSError, IndexError, KeyError) as e:
        return f"{toolchain.tools[0]} does not run: {e}"


def elf_interpreter(path: str) -> str | None:
    """The loader a 64-bit ELF file names (`PT_INTERP`), None for a static one or none
    readable: exec opens it as it opens the program."""
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if len(header) < 64 or header[:5] != b"\x7fELF\x02":
                return None
            (phoff,) = struct.unpack_from("<Q", header, 32)
            size, count = struct.unpack_from("<HH", header, 54)
            f.seek(phoff)
            table = f.read(size * count)
            for i in range(count):
                kind, _, offset, _, _, length = struct.unpack_from("<IIQQQQ", table, i * size)
                if kind == 3:  # PT_INTERP
                    f.seek(offset)
                    return f.read(length).rstrip(b"\0").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def pch_of(directory: str, cpp: Found | str | None) -> dict[str, str] | None:
    """The zygote's `pch`: `directory` when it holds the precompiled headers that `build_pch`
    made with this g++, else None (C++ then builds without one)."""
    if not directory or not isinstance(cpp, Found):
        return None
    try:
        with open(os.path.join(directory, _PCH_STAMP)) as f:
            stamp = f.read()
    except OSError:
        return None
    if stamp != _pch_stamp(cpp) or not all(
        os.path.isfile(os.path.join(directory, f"{header}.gch")) for header in _PCH_HEADERS
    ):
        return None
    return {"dir": directory, "dialect": TOOLCHAINS["cpp"].dialects[0]}


def build_pch(directory: str, cpp: Found) -> str:
    """Precompile `bits/stdc++.h`, and each of `CONTEST_TIERS` (written there), into
    `directory` for the default C++ dialect, unless there already: done by the service (its
    own g++ on system headers), not in a sandbox. Returns what it did; OSError when it
    could not."""
    names = ", ".join(_PCH_HEADERS)
    if pch_of(directory, cpp) is not None:
        return f"precompiled {names} kept in {directory}"
    dialect = TOOLCHAINS["cpp"].dialects[0]
    gxx = cpp.tools["g++"]
    found = run_tool(
        [gxx, f"-std={dialect}", "-H", "-E", "-x", "c++", "-", "-o", os.devnull],
        {"PATH": BUILD_PATH},
        stdin=f"#include <{PCH_HEADER}>\n".encode(),
    )
    sources = [(found.stderr.decode().splitlines()[0].lstrip(". "), PCH_HEADER)]
    os.makedirs(os.path.join(directory, "bits"), exist_ok=True)
    for name, headers in CONTEST_TIERS:
        tier = os.path.join(directory, name)
        with open(f"{tier}.{os.getpid()}", "w") as f:
            f.write("".join(f"#include <{header}>\n" for header in headers))
        os.chmod(f"{tier}.{os.getpid()}", 0o644)
        os.replace(f"{tier}.{os.getpid()}", tier)
        sources.append((tier, name))
    for source, name in sources:
        partial = os.path.join(directory, f"{name}.gch.{os.getpid()}")
        run_tool([gxx, *Cpp.pch_flags(dialect), source, "-o", partial], {"PATH": BUILD_PATH}, 120)
        os.chmod(partial, 0o644)
        os.replace(partial, os.path.join(directory, f"{name}.gch"))
    with open(os.path.join(directory, _PCH_STAMP), "w") as f:
        f.write(_pch_stamp(cpp))
    return f"precompiled {names} built in {directory}"


_PCH_STAMP = "stamp"
_PCH_HEADERS = (PCH_HEADER, *(name for name, _ in CONTEST_TIERS))


def _pch_stamp(cpp: Found) -> str:
    dialect = TOOLCHAINS["cpp"].dialects[0]
    gxx = os.stat(cpp.tools["g++"])
    flags = " ".join(Cpp.pch_flags(dialect))
    tiers = "; ".join(f"{name}: {' '.join(headers)}" for name, headers in CONTEST_TIERS)
    return f"{cpp.tools['g++']} {gxx.st_size} {gxx.st_mtime_ns} {flags} {tiers}"


def found_to_json(found: Found) -> dict[str, object]:
    return {"tools": found.tools, "reads": found.reads, "version": found.version}


def found_from_json(data: Mapping[str, object]) -> Found:
    tools, reads = data["tools"], data["reads"]
    assert isinstance(tools, dict) and isinstance(reads, list)
    return Found(dict(tools), list(reads), str(data["version"]))


def which(tool: str, path: str) -> str | None:
    """`shutil.which`, imported here only: the zygote imports this module, and `shutil`
    maps the compression libraries (a dozen more mappings for every fork to copy)."""
    import shutil

    return shutil.which(tool, path=path)
