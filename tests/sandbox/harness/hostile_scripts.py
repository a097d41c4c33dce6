"""The hostile families in C, the languages run as scripts (Ruby, PHP, Perl, Lua, TypeScript,
R, Racket), Verilog, the JVM's Scala and Kotlin, C# on Mono, and D.

One combined program per language, short so that each confined campaign
pays a runtime's start once per language: it tries every way its language
has to start a process (fork, a shell by exec, `system`, backticks, a pipe,
and the raw `fork` and `kill` calls where the language makes raw syscalls),
signals other processes (every process, its parent, PID 1), the loopback
listeners (TCP, UDP) and files outside its directory (named by the run's
marker, so the harness finds them). It prints a line starting with
`ACHIEVED` for each step that worked, as the Python programs do
(`hostile_programs`); the harness makes the same checks around it. Lua's
standard library has no sockets and no signals: its program tries what it
has. The targets of one run come first as the language's constants.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from tests.sandbox.harness.hostile_native import cpp_prelude
from tests.sandbox.harness.hostile_programs import ERR, OK, Hostile, Target


def _quoted(text: str) -> str:
    """`text` as a single-quoted literal of Ruby, PHP, Perl and Lua alike (no interpolation)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _constants(target: Target, quoted: Callable[[str], str] = _quoted) -> dict[str, str]:
    """Each target as a literal: the ports as numbers, the paths outside the run as a list
    (items separated by `, `; Racket's list takes spaces)."""
    outside = ", ".join(quoted(path) for path in target.outside_paths())
    return {
        "SERVICE_PORT": str(target.service_port),
        "TCP_PORT": str(target.tcp_port),
        "UDP_PORT": str(target.udp_port),
        "RUN_ID": quoted(target.run_id),
        "OUTSIDE": outside,
    }


_PRELUDES = {
    "R": "{name} <- {value}\n",
    "typescript": "const {name} = {value};\n",
    "ruby": "{name} = {value}\n",
    "php": "define('{name}', {value});\n",
    "perl": "use constant {name} => {value};\n",
    "lua": "local {name} = {value}\n",
    "racket": "(define {name} {value})\n",
}
_LISTS = {"typescript": "[{}]", "ruby": "[{}]", "php": "[{}]", "perl": "({})", "lua": "{{{}}}"}
_LISTS["R"] = "c({})"
_LISTS["racket"] = "(list {})"


@dataclass(frozen=True)
class ScriptHostile(Hostile):
    """A hostile program in an interpreted language: its constants first, then its body."""

    def source(self, target: Target) -> str:
        racket = self.language == "racket"  # its strings are JSON's, its lists unseparated
        constants = _constants(target, json.dumps if racket else _quoted)
        outside = constants["OUTSIDE"].replace('", "', '" "') if racket else constants["OUTSIDE"]
        constants["OUTSIDE"] = _LISTS[self.language].format(outside)
        lines = [_PRELUDES[self.language].format(name=k, value=v) for k, v in constants.items()]
        opening = {"php": "<?php\n", "racket": "#lang racket\n"}.get(self.language, "")
        return opening + "".join(lines) + textwrap.dedent(self.body)


@dataclass(frozen=True)
class CHostile(Hostile):
    """A hostile program in C: the C++ programs' constants, which are C too."""

    language: str = "c"

    def source(self, target: Target) -> str:
        prelude = cpp_prelude(target).replace("#include <string>\n#include <vector>\n", "")
        for header in ("cerrno", "cstdio", "cstdlib", "cstring"):
            prelude = prelude.replace(f"<{header}>", f"<{header[1:]}.h>")
        return prelude + textwrap.dedent(self.body)


RUBY = ScriptHostile(
    "ruby_escape",
    "Ruby: fork, exec, system, backticks, raw fork and kill, signals, TCP, UDP, files outside",
    """\
    require "socket"
    $stdout.sync = true
    def hit(what)
      puts "ACHIEVED #{what}"
    end
    def try(what)
      yield
    rescue Exception => e
      puts "#{what}: #{e.class}"
    end
    puts "CWD=#{Dir.pwd}"
    try("fork") { pid = fork { exit!(0) }; hit("forked #{pid}") }
    x86_64 = RUBY_PLATFORM.start_with?("x86_64")
    try("raw fork") { pid = syscall(57); exit!(0) if pid == 0; hit("raw fork #{pid}") } if x86_64
    try("system") { hit("system ran a shell") if system("/bin/sh", "-c", "true") }
    try("backticks") { print `echo ACHIEVED backticks ran a shell` }
    try("popen") { IO.popen(["echo", "ACHIEVED popen ran echo"]) { |io| print io.read } }
    [-1, Process.ppid, 1].each do |pid|
      try("kill #{pid}") { Process.kill(:KILL, pid); hit("signal to #{pid}") }
    end
    try("raw kill") { hit("raw kill") if syscall(62, Process.ppid, 0) == 0 } if x86_64
    [SERVICE_PORT, TCP_PORT].each do |port|
      try("tcp #{port}") { TCPSocket.new("127.0.0.1", port).close; hit("connected to #{port}") }
    end
    try("udp") { UDPSocket.new.send("x", 0, "127.0.0.1", UDP_PORT); hit("sent a datagram") }
    (OUTSIDE + ["../#{RUN_ID}"]).each do |path|
      try("write #{path}") { File.write(path, "x"); hit("wrote #{path}") }
    end
    try("exec") { exec("/bin/sh", "-c", "echo ACHIEVED exec ran a shell") }
    """,
    frozenset({OK, ERR}),
    time_s=3.0,  # the runtime's own start (RubyGems, PHP's modules) is slow on a loaded machine
    language="ruby",
)

PHP = ScriptHostile(
    "php_escape",
    "PHP: shell_exec, system, proc_open, pcntl_fork and exec, posix_kill, FFI, TCP, UDP, files",
    """\
    function hit($what) { echo "ACHIEVED $what\\n"; }
    echo "CWD=" . getcwd() . "\\n";
    $out = @shell_exec('echo ACHIEVED shell_exec ran a shell'); if ($out) echo $out;
    @system('echo ACHIEVED system ran a shell');
    $shell = ['/bin/sh', '-c', 'echo ACHIEVED proc_open ran a shell'];
    $process = @proc_open($shell, [1 => ['pipe', 'w']], $pipes);
    if ($process) echo stream_get_contents($pipes[1]);
    if (function_exists('pcntl_fork')) {
        $pid = @pcntl_fork();
        if ($pid === 0) exit(0);
        if ($pid > 0) hit("forked $pid"); else echo "pcntl_fork refused\\n";
    }
    if (function_exists('posix_kill')) {
        foreach ([-1, posix_getppid(), 1] as $pid) if (@posix_kill($pid, 9)) hit("signal to $pid");
    }
    if (class_exists('FFI') && php_uname('m') === 'x86_64') {
        try {
            $libc = FFI::cdef('long syscall(long number, ...); void _exit(int status);');
            $pid = $libc->syscall(57);
            if ($pid == 0) $libc->_exit(0);
            if ($pid > 0) hit("raw fork $pid");
            if ($libc->syscall(62, posix_getppid(), 0) == 0) hit('raw kill');
        } catch (Throwable $e) { echo 'FFI: ' . get_class($e) . "\\n"; }
    }
    foreach ([SERVICE_PORT, TCP_PORT] as $port) {
        $socket = @fsockopen('127.0.0.1', $port, $errno, $error, 0.5);
        if ($socket) hit("connected to $port"); else echo "tcp $port: $error\\n";
    }
    $udp = @stream_socket_client('udp://127.0.0.1:' . UDP_PORT);
    if ($udp && @fwrite($udp, 'x') === 1) hit('sent a datagram');
    foreach (array_merge(OUTSIDE, ['../' . RUN_ID]) as $path) {
        if (@file_put_contents($path, 'x') !== false) hit("wrote $path");
    }
    if (function_exists('pcntl_exec')) {
        @pcntl_exec('/bin/sh', ['-c', 'echo ACHIEVED pcntl_exec ran a shell']);
    }
    """,
    frozenset({OK, ERR}),
    time_s=3.0,  # the runtime's own start (RubyGems, PHP's modules) is slow on a loaded machine
    language="php",
)

PERL = ScriptHostile(
    "perl_escape",
    "Perl: fork, exec, system, backticks, raw fork and kill by syscall, signals, TCP, UDP, files",
    """\
    use strict;
    use warnings;
    use Config;
    use Cwd;
    use POSIX ();
    use Socket;
    $| = 1;
    sub hit { print "ACHIEVED $_[0]\\n" }
    print "CWD=" . getcwd() . "\\n";
    my $pid = fork();
    if (defined $pid) { POSIX::_exit(0) if $pid == 0; hit("forked $pid") }
    else { print "fork: $!\\n" }
    if ($Config{archname} =~ /x86_64/) {
        my $raw = syscall(57);
        POSIX::_exit(0) if $raw == 0;
        hit("raw fork $raw") if $raw > 0;
        hit("raw kill") if syscall(62, getppid(), 0) == 0;
    }
    hit("system ran a shell") if system('/bin/sh', '-c', 'true') == 0;
    my $out = `echo ACHIEVED backticks ran a shell`;
    print $out if defined $out;
    for my $target (-1, getppid(), 1) { hit("signal to $target") if kill('KILL', $target) }
    for my $port (SERVICE_PORT, TCP_PORT) {
        if (socket(my $s, PF_INET, SOCK_STREAM, 0)) {
            hit("connected to $port") if connect($s, sockaddr_in($port, inet_aton('127.0.0.1')));
        } else { print "socket: $!\\n" }
    }
    if (socket(my $u, PF_INET, SOCK_DGRAM, 0)) {
        hit('sent a datagram') if send($u, 'x', 0, sockaddr_in(UDP_PORT, inet_aton('127.0.0.1')));
    }
    for my $path (OUTSIDE, '../' . RUN_ID) {
        if (open(my $f, '>', $path)) { print $f 'x'; close $f; hit("wrote $path") }
    }
    exec('/bin/sh', '-c', 'echo ACHIEVED exec ran a shell') or print "exec: $!\\n";
    """,
    frozenset({OK, ERR}),
    language="perl",
)

LUA = ScriptHostile(
    "lua_escape",
    "Lua: os.execute and io.popen (a shell each), files outside its directory",
    """\
    local function hit(what) print("ACHIEVED " .. what) end
    print("CWD=" .. (os.getenv("HOME") or "?"))  -- a run's HOME is its directory
    print("os.execute", os.execute("echo ACHIEVED os.execute ran a shell"))
    local ok, pipe = pcall(io.popen, "echo ACHIEVED popen ran a shell")
    if ok and pipe then io.write(pipe:read("a") or "") pipe:close() end
    local paths = OUTSIDE
    paths[#paths + 1] = "../" .. RUN_ID
    for _, path in ipairs(paths) do
        local f = io.open(path, "w")
        if f then f:write("x") f:close() hit("wrote " .. path) end
    end
    """,
    frozenset({OK, ERR}),
    language="lua",
)

C = CHostile(
    "c_escape",
    "C: fork, exec of a shell, kill(-1), its parent and PID 1, TCP, UDP, files outside",
    """\
    #include <limits.h>
    static void hit(const char *what) { printf("ACHIEVED %s\\n", what); fflush(stdout); }
    int main(void) {
        char cwd[PATH_MAX], path[PATH_MAX + 256];
        if (getcwd(cwd, sizeof cwd)) printf("CWD=%s\\n", cwd);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        if (pid > 0) hit("forked");
        if (kill(-1, SIGKILL) == 0) hit("kill(-1)");
        if (kill(getppid(), SIGKILL) == 0) hit("signal to its parent");
        if (kill(1, SIGKILL) == 0) hit("signal to PID 1");
        int ports[] = {SERVICE_PORT, TCP_PORT};
        for (int i = 0; i < 2; i++) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in to = {0};
            to.sin_family = AF_INET; to.sin_port = htons(ports[i]);
            to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof to) == 0) hit("connected");
            int udp = socket(AF_INET, SOCK_DGRAM, 0);
            to.sin_port = htons(UDP_PORT);
            if (udp >= 0 && sendto(udp, "x", 1, 0, (struct sockaddr *)&to, sizeof to) == 1)
                hit("sent a datagram");
        }
        const char *places[] = {"/tmp", "/var/tmp", "/dev/shm", HOME_DIR, REPO_DIR, ".."};
        for (int i = 0; i < 6; i++) {
            snprintf(path, sizeof path, "%s/%s", places[i], RUN_ID);
            int fd = open(path, O_WRONLY | O_CREAT, 0644);
            if (fd >= 0) { hit(path); close(fd); }
        }
        char sh[] = "/bin/sh", c[] = "-c", say[] = "echo ACHIEVED exec ran a shell";
        char *argv[] = {sh, c, say, NULL}, *envp[] = {NULL};
        execve(sh, argv, envp);
        printf("exec refused: %s\\n", strerror(errno));
        return 0;
    }
    """,
    frozenset({OK, ERR}),
)

TYPESCRIPT = ScriptHostile(
    "typescript_escape",
    "TypeScript on Node: execSync, spawnSync, kill, TCP, UDP, files outside its directory",
    """\
    const cp = require("child_process"), fs = require("fs");
    const net = require("net"), dgram = require("dgram");
    const hit = (what: string) => console.log(`ACHIEVED ${what}`);
    const attempt = (what: string, step: () => void) => {
      try { step(); } catch (e: any) { console.log(`${what}: ${e.code || e.message}`); }
    };
    console.log(`CWD=${process.cwd()}`);
    attempt("execSync", () => process.stdout.write(cp.execSync("echo ACHIEVED execSync ran")));
    attempt("spawnSync", () => {
      const done = cp.spawnSync("/bin/sh", ["-c", "echo ACHIEVED spawnSync ran a shell"]);
      if (done.stdout) process.stdout.write(done.stdout);
      if (done.error) throw done.error;
    });
    for (const pid of [-1, process.ppid, 1]) {
      attempt(`kill ${pid}`, () => { process.kill(pid, "SIGKILL"); hit(`signal to ${pid}`); });
    }
    for (const path of [...OUTSIDE, `../${RUN_ID}`]) {
      attempt(`write ${path}`, () => { fs.writeFileSync(path, "x"); hit(`wrote ${path}`); });
    }
    for (const port of [SERVICE_PORT, TCP_PORT]) {
      attempt(`tcp ${port}`, () => {
        const socket = net.connect(port, "127.0.0.1", () => hit(`connected to ${port}`));
        socket.on("error", (e: any) => console.log(`tcp ${port}: ${e.code}`));
      });
    }
    attempt("udp", () => {
      const udp = dgram.createSocket("udp4");
      udp.on("error", (e: any) => console.log(`udp: ${e.code}`));
      udp.send("x", UDP_PORT, "127.0.0.1", (e: any) => e || hit("sent a datagram"));
    });
    setTimeout(() => process.exit(0), 300);
    """,
    frozenset({OK, ERR}),
    time_s=3.0,
    language="typescript",
)

R = ScriptHostile(
    "r_escape",
    "R: system, pipe, pskill of every process and PID 1, TCP, files outside its directory",
    """\
    hit <- function(what) cat("ACHIEVED", what, "\\n")
    attempt <- function(what, expr) tryCatch(expr,
        error = function(e) cat(what, ":", conditionMessage(e), "\\n"),
        warning = function(w) cat(what, ":", conditionMessage(w), "\\n"))
    cat("CWD=", getwd(), "\\n", sep = "")
    attempt("system", cat(system("echo ACHIEVED system ran a shell", intern = TRUE), sep = "\\n"))
    attempt("system2", cat(system2("echo", "ACHIEVED system2", stdout = TRUE), sep = "\\n"))
    attempt("pipe", {
        con <- pipe("echo ACHIEVED pipe ran a shell")
        cat(readLines(con), sep = "\\n")
        close(con)
    })
    for (pid in c(-1, 1)) attempt("pskill", if (isTRUE(tools::pskill(pid, 9))) hit(pid))
    for (port in c(SERVICE_PORT, TCP_PORT)) attempt(paste("tcp", port), {
        con <- socketConnection("127.0.0.1", port, open = "r+b", timeout = 1)
        hit(paste("connected to", port))
        close(con)
    })
    for (path in c(OUTSIDE, paste0("../", RUN_ID))) attempt(paste("write", path), {
        writeLines("x", path)
        hit(paste("wrote", path))
    })
    """,
    frozenset({OK, ERR}),
    time_s=6.0,  # R starts in 1-3 s with two campaigns on a loaded 2-core machine
    language="R",
)


@dataclass(frozen=True)
class VerilogHostile(Hostile):
    """A hostile testbench: its targets, the paths outside its run, written out in full."""

    language: str = "verilog"

    def source(self, target: Target) -> str:
        paths = [*target.outside_paths(), f"../{target.run_id}"]
        writes = "".join(
            f'    fd = $fopen("{path}", "w");\n'
            f'    if (fd != 0) begin $fdisplay(fd, "x"); $fclose(fd); '
            f'$display("ACHIEVED wrote {path}"); end\n'
            for path in paths
        )
        return textwrap.dedent(self.body).replace("    // WRITES\n", writes)


VERILOG = VerilogHostile(
    "verilog_escape",
    "Verilog (vvp): files outside its directory by $fopen",
    """\
    module tb;
      integer fd;
      initial begin
        // WRITES
        $display("wrote nothing outside");
        $finish;
      end
    endmodule
    """,
    frozenset({OK, ERR}),
)

_JVM_CONSTANTS = {
    "scala": ("  val {name} = {value}\n", "Seq({})"),
    "kotlin_script": ("val {name} = {value}\n", "listOf({})"),
}


@dataclass(frozen=True)
class JvmHostile(Hostile):
    """A hostile program in a language the JVM runs (Scala, a Kotlin script): its targets as
    the language's values (JSON strings are Scala's and Kotlin's string literals here, with
    `$` escaped for Kotlin's templates), where the body says `// CONSTANTS`."""

    def source(self, target: Target) -> str:
        line, listed = _JVM_CONSTANTS[self.language]
        texts = [*target.outside_paths(), target.run_id]
        quoted = [json.dumps(text).replace("$", "\\$") for text in texts]
        values = {
            "SERVICE_PORT": str(target.service_port),
            "TCP_PORT": str(target.tcp_port),
            "UDP_PORT": str(target.udp_port),
            "RUN_ID": quoted[-1],
            "OUTSIDE": listed.format(", ".join(quoted[:-1])),
        }
        constants = "".join(line.format(name=k, value=v) for k, v in values.items())
        return textwrap.dedent(self.body).replace("// CONSTANTS\n", constants)


SCALA = JvmHostile(
    "scala_escape",
    "Scala (JVM): ProcessBuilder and Runtime.exec of a shell, kill of its parent, PID 1 and "
    "every process, TCP, UDP, files outside its directory",
    """\
    object Escape {
    // CONSTANTS
      def hit(what: String): Unit = println("ACHIEVED " + what)
      def attempt(what: String)(step: => Unit): Unit =
        try step catch { case e: Throwable => println(what + ": " + e) }
      def main(args: Array[String]): Unit = {
        println("CWD=" + System.getProperty("user.dir"))
        attempt("ProcessBuilder") {
          val say = "echo ACHIEVED ProcessBuilder ran a shell"
          new ProcessBuilder("/bin/sh", "-c", say).inheritIO().start().waitFor()
        }
        attempt("Runtime.exec") {
          if (Runtime.getRuntime.exec(Array("/bin/sh", "-c", "true")).waitFor() == 0) hit("exec")
        }
        val me = ProcessHandle.current
        var targets = Seq(me.parent, ProcessHandle.of(1L)).filter(_.isPresent).map(_.get)
        attempt("every process") {
          val all = ProcessHandle.allProcesses.iterator
          while (all.hasNext) { val p = all.next; if (p.pid != me.pid) targets :+= p }
        }
        for (p <- targets) attempt("kill " + p.pid) {
          if (p.destroyForcibly()) hit("signal to " + p.pid)
        }
        for (port <- Seq(SERVICE_PORT, TCP_PORT)) attempt("tcp " + port) {
          new java.net.Socket("127.0.0.1", port).close(); hit("connected to " + port)
        }
        attempt("udp") {
          val to = java.net.InetAddress.getByName("127.0.0.1")
          val packet = new java.net.DatagramPacket(Array[Byte](120), 1, to, UDP_PORT)
          new java.net.DatagramSocket().send(packet)
          hit("sent a datagram")
        }
        for (path <- OUTSIDE :+ ("../" + RUN_ID)) attempt("write " + path) {
          java.nio.file.Files.write(java.nio.file.Paths.get(path), "x".getBytes)
          hit("wrote " + path)
        }
      }
    }
    """,
    frozenset({OK, ERR}),
    time_s=5.0,  # a JVM's start, and its ProcessBuilder's, on a loaded machine
    language="scala",
)

KOTLIN = JvmHostile(
    "kotlin_escape",
    "Kotlin script (JVM): ProcessBuilder and Runtime.exec of a shell, kill of its parent, "
    "PID 1 and every process, TCP, UDP, files outside its directory",
    """\
    // CONSTANTS
    fun hit(what: String) = println("ACHIEVED " + what)
    fun attempt(what: String, step: () -> Unit) {
        try { step() } catch (e: Throwable) { println(what + ": " + e) }
    }
    println("CWD=" + System.getProperty("user.dir"))
    attempt("ProcessBuilder") {
        val shell = ProcessBuilder("/bin/sh", "-c", "echo ACHIEVED ProcessBuilder ran a shell")
        shell.inheritIO().start().waitFor()
    }
    attempt("Runtime.exec") {
        if (Runtime.getRuntime().exec(arrayOf("/bin/sh", "-c", "true")).waitFor() == 0) hit("exec")
    }
    val me = ProcessHandle.current()
    val targets = mutableListOf(me.parent().orElse(null), ProcessHandle.of(1L).orElse(null))
    attempt("every process") {
        targets += ProcessHandle.allProcesses().iterator().asSequence().filter { it != me }
    }
    for (p in targets.filterNotNull()) attempt("kill " + p.pid()) {
        if (p.destroyForcibly()) hit("signal to " + p.pid())
    }
    for (port in listOf(SERVICE_PORT, TCP_PORT)) attempt("tcp " + port) {
        java.net.Socket("127.0.0.1", port).close(); hit("connected to " + port)
    }
    attempt("udp") {
        val to = java.net.InetAddress.getByName("127.0.0.1")
        java.net.DatagramSocket().send(java.net.DatagramPacket(byteArrayOf(120), 1, to, UDP_PORT))
        hit("sent a datagram")
    }
    for (path in OUTSIDE + ("../" + RUN_ID)) attempt("write " + path) {
        java.io.File(path).writeText("x"); hit("wrote " + path)
    }
    """,
    frozenset({OK, ERR}),
    time_s=5.0,
    language="kotlin_script",
)


@dataclass(frozen=True)
class CSharpHostile(Hostile):
    """A hostile program in C#: its targets as static fields where the body says
    `// CONSTANTS` (JSON strings are C#'s string literals here)."""

    language: str = "csharp"

    def source(self, target: Target) -> str:
        outside = ", ".join(json.dumps(path) for path in target.outside_paths())
        constants = (
            f"    const int SERVICE_PORT = {target.service_port}, TCP_PORT = {target.tcp_port};\n"
            f"    const int UDP_PORT = {target.udp_port};\n"
            f"    const string RUN_ID = {json.dumps(target.run_id)};\n"
            f"    static readonly string[] OUTSIDE = {{ {outside} }};\n"
        )
        return textwrap.dedent(self.body).replace("    // CONSTANTS\n", constants)


CSHARP = CSharpHostile(
    "csharp_escape",
    "C# (Mono): Process.Start of a shell, fork, execve and kill(-1) through P/Invoke, "
    "Process.Kill of its parent and PID 1, TCP, UDP, files outside its directory",
    """\
    using System;
    using System.Diagnostics;
    using System.IO;
    using System.Net.Sockets;
    using System.Runtime.InteropServices;

    class Escape {
        // CONSTANTS
        [DllImport("libc", SetLastError = true)] static extern int fork();
        [DllImport("libc", SetLastError = true)] static extern int kill(int pid, int signal);
        [DllImport("libc", SetLastError = true)] static extern int getppid();
        [DllImport("libc", SetLastError = true)] static extern void _exit(int status);
        [DllImport("libc", SetLastError = true)]
        static extern int execve(string path, string[] argv, string[] envp);

        static void Hit(string what) { Console.WriteLine("ACHIEVED " + what); }
        static void Attempt(string what, Action step) {
            try { step(); } catch (Exception e) { Console.WriteLine(what + ": " + e.GetType()); }
        }

        static void Main() {
            Console.WriteLine("CWD=" + Directory.GetCurrentDirectory());
            Attempt("Process.Start", () => {
                var shell = new ProcessStartInfo("/bin/sh", "-c 'echo ACHIEVED Process.Start'");
                shell.UseShellExecute = false;
                Process.Start(shell).WaitForExit();
            });
            Attempt("fork", () => {
                int pid = fork();
                if (pid == 0) _exit(0);
                if (pid > 0) Hit("forked " + pid);
            });
            Attempt("kill", () => {
                foreach (int pid in new[] { -1, getppid(), 1 })
                    if (kill(pid, 9) == 0) Hit("signal to " + pid);
            });
            Attempt("Process.Kill", () => {
                Process.GetProcessById(1).Kill();
                Hit("Process.Kill of PID 1");
            });
            // Socket, not TcpClient: Mono's TcpClient swallows a socket it could not make
            var inet = AddressFamily.InterNetwork;
            foreach (int port in new[] { SERVICE_PORT, TCP_PORT }) Attempt("tcp " + port, () => {
                var tcp = new Socket(inet, SocketType.Stream, ProtocolType.Tcp);
                tcp.Connect("127.0.0.1", port);
                if (tcp.Connected) Hit("connected to " + port);
            });
            Attempt("udp", () => {
                var udp = new Socket(inet, SocketType.Dgram, ProtocolType.Udp);
                var to = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, UDP_PORT);
                if (udp.SendTo(new byte[] { 120 }, to) == 1) Hit("sent a datagram");
            });
            foreach (string path in OUTSIDE) Attempt("write " + path, () => {
                File.WriteAllText(path, "x");
                Hit("wrote " + path);
            });
            Attempt("write ../", () => {
                File.WriteAllText("../" + RUN_ID, "x");
                Hit("wrote ../" + RUN_ID);
            });
            Console.Out.Flush();
            string[] argv = { "/bin/sh", "-c", "echo ACHIEVED execve ran a shell", null };
            execve("/bin/sh", argv, new string[] { null });
            Console.WriteLine("execve refused: " + Marshal.GetLastWin32Error());
        }
    }
    """,
    frozenset({OK, ERR}),
    time_s=5.0,  # Mono's start and its Process machinery on a loaded machine
)


@dataclass(frozen=True)
class DHostile(Hostile):
    """A hostile program in D: its targets as module constants where the body says
    `// CONSTANTS` (JSON strings are D's string literals here)."""

    language: str = "d"

    def source(self, target: Target) -> str:
        outside = ", ".join(json.dumps(path) for path in target.outside_paths())
        constants = (
            f"enum ushort SERVICE_PORT = {target.service_port}, TCP_PORT = {target.tcp_port};\n"
            f"enum ushort UDP_PORT = {target.udp_port};\n"
            f"enum RUN_ID = {json.dumps(target.run_id)};\n"
            f"immutable string[] OUTSIDE = [{outside}];\n"
        )
        return textwrap.dedent(self.body).replace("// CONSTANTS\n", constants)


D = DHostile(
    "d_escape",
    "D (ldc2, druntime preloaded with the sandbox's library): fork, execv of a shell, "
    "kill(-1), its parent and PID 1, TCP, UDP, files outside its directory, a GC run",
    """\
    import core.memory : GC;
    import core.stdc.stdlib : exit;
    import core.sys.posix.netinet.in_;
    import core.sys.posix.signal : SIGKILL, kill;
    import core.sys.posix.sys.socket;
    import core.sys.posix.unistd : _exit, execv, fork, getppid;
    import std.file : getcwd, write;
    import std.stdio : stdout, writeln;
    import std.string : toStringz;
    // CONSTANTS
    void hit(string what) { writeln("ACHIEVED ", what); stdout.flush(); }
    void main() {
        writeln("CWD=", getcwd());
        stdout.flush();
        int[][] garbage;
        foreach (i; 0 .. 2000) garbage ~= new int[1000];
        GC.collect();  // the collector scans the main thread's stack: the preload's answer
        auto pid = fork();
        if (pid == 0) _exit(0);
        if (pid > 0) hit("forked");
        foreach (target; [-1, getppid(), 1]) if (kill(target, SIGKILL) == 0) hit("signal");
        foreach (port; [SERVICE_PORT, TCP_PORT]) {
            sockaddr_in to;
            to.sin_family = AF_INET;
            to.sin_port = htons(port);
            to.sin_addr.s_addr = htonl(0x7f000001);
            auto fd = socket(AF_INET, SOCK_STREAM, 0);
            if (fd >= 0 && connect(fd, cast(sockaddr*)&to, to.sizeof) == 0) hit("connected");
            auto udp = socket(AF_INET, SOCK_DGRAM, 0);
            to.sin_port = htons(UDP_PORT);
            if (udp >= 0 && sendto(udp, "x".ptr, 1, 0, cast(sockaddr*)&to, to.sizeof) == 1)
                hit("sent a datagram");
        }
        foreach (path; OUTSIDE ~ ("../" ~ RUN_ID)) {
            try { write(path, "x"); hit("wrote " ~ path); }
            catch (Exception e) { writeln("write ", path, ": ", e.msg); }
        }
        const(char)*[4] argv = ["/bin/sh".toStringz, "-c".toStringz,
                                "echo ACHIEVED execv ran a shell".toStringz, null];
        execv(argv[0], argv.ptr);
        writeln("execv refused");
    }
    """,
    frozenset({OK, ERR}),
    time_s=3.0,
)

RACKET = ScriptHostile(
    "racket_escape",
    "Racket: system and process (a shell), fork, kill(-1), its parent and PID 1 and execv "
    "through the FFI, TCP, UDP, files outside its directory",
    """\
    (require racket/system ffi/unsafe racket/udp)
    (define (hit what) (printf "ACHIEVED ~a\\n" what) (flush-output))
    (define-syntax-rule (attempt what body ...)
      (with-handlers ([(lambda (e) #t)
                       (lambda (e) (printf "~a: ~a\\n" what (if (exn? e) (exn-message e) e)))])
        body ...))
    (printf "CWD=~a\\n" (path->string (current-directory)))
    (attempt "system" (when (system "echo ACHIEVED system ran a shell") (hit "system")))
    (attempt "process" (let ([p (process "echo ACHIEVED process ran a shell")])
                         (display (read-line (car p)))))
    (define libc-fork (get-ffi-obj "fork" #f (_fun -> _int)))
    (define libc-exit (get-ffi-obj "_exit" #f (_fun _int -> _void)))
    (define libc-kill (get-ffi-obj "kill" #f (_fun _int _int -> _int)))
    (define libc-getppid (get-ffi-obj "getppid" #f (_fun -> _int)))
    (attempt "fork" (let ([pid (libc-fork)])
                      (when (= pid 0) (libc-exit 0))
                      (when (> pid 0) (hit (format "forked ~a" pid)))))
    (for ([pid (list -1 (libc-getppid) 1)])
      (attempt "kill" (when (= 0 (libc-kill pid 9)) (hit (format "signal to ~a" pid)))))
    (for ([port (list SERVICE_PORT TCP_PORT)])
      (attempt (format "tcp ~a" port)
               (let-values ([(in out) (tcp-connect "127.0.0.1" port)])
                 (hit (format "connected to ~a" port)))))
    (attempt "udp" (udp-send-to (udp-open-socket) "127.0.0.1" UDP_PORT #"x")
                   (hit "sent a datagram"))
    (for ([path (append OUTSIDE (list (string-append "../" RUN_ID)))])
      (attempt (format "write ~a" path)
               (with-output-to-file path (lambda () (display "x")))
               (hit (format "wrote ~a" path))))
    (define libc-execv (get-ffi-obj "execv" #f (_fun _string (_list i _string) -> _int)))
    (attempt "execv" (libc-execv "/bin/sh" (list "/bin/sh" "-c" "echo ACHIEVED execv" #f)))
    """,
    frozenset({OK, ERR}),
    time_s=8.0,  # Racket's start loads its libraries: seconds on a loaded machine
    language="racket",
)

SCRIPTS: tuple[Hostile, ...] = (C, RUBY, PHP, PERL, LUA, TYPESCRIPT, R, VERILOG, SCALA, KOTLIN)
SCRIPTS += (CSHARP, D, RACKET)
"""One hostile program per language beyond Python and C++, in the order the campaigns run them
(TypeScript's runs are Node's: it stands for JavaScript too; Kotlin's script stands for a
Kotlin program, built and run the same way but for its launcher)."""
