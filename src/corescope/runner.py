"""The one place corescope runs external programs. Always argument lists, never a shell.
Tests can hand a `RecordedRunner` the captured output of `systemctl`, `crictl`, and so on."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from corescope.errors import MissingTool

if TYPE_CHECKING:
    import subprocess

# subprocess.DEVNULL: subprocess itself is imported when a program runs, not by every command
# at start-up (tests/unit check the value)
DEVNULL = -3


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class ToolMissing(MissingTool, RuntimeError):
    """The program is not installed; the message names it."""


class Runner:
    """Runs real programs."""

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    def run(self, argv: Sequence[str], timeout: float = 30.0) -> RunResult:
        if not argv:
            raise ValueError("empty argv")
        if self.which(argv[0]) is None:
            raise ToolMissing(f"{argv[0]} not found")
        import subprocess

        try:
            proc = subprocess.run(
                list(argv), capture_output=True, text=True, timeout=timeout, check=False,
                errors="replace",
            )
        except subprocess.TimeoutExpired as exc:
            return RunResult(tuple(argv), -1, _text(exc.stdout), f"timed out after {timeout}s")
        return RunResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)

    def start(self, argv: Sequence[str], stdout: IO[Any] | int | None = DEVNULL,
              stderr: IO[Any] | int | None = DEVNULL, umask: int = -1
              ) -> subprocess.Popen[bytes]:
        """Start a long-running program (`perf record`, a streamed `perf script`); the caller
        owns the process and must wait for or kill it. `umask` (unless -1) is the child's own,
        set between fork and exec: this process's, which all its threads share, is left be."""
        if not argv:
            raise ValueError("empty argv")
        if self.which(argv[0]) is None:
            raise ToolMissing(f"{argv[0]} not found")
        import subprocess

        return subprocess.Popen(self._dies_with_us(argv), stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=stderr, umask=umask)

    def _dies_with_us(self, argv: Sequence[str]) -> list[str]:
        """A long-running child (perf record -a profiles the whole machine) must not outlive a
        `kill -9` of the recorder: util-linux `setpriv --pdeathsig` makes the kernel send it
        SIGTERM when we die. (preexec_fn would run Python between fork and exec, which is not
        safe in a process with threads, as the recorder is.)"""
        setpriv = self.which("setpriv")
        if setpriv is None:
            return list(argv)
        return [setpriv, "--pdeathsig", "TERM", "--", *argv]


class RecordedRunner(Runner):
    """Answers from captured output keyed by the argv prefix; anything else is 'not found'."""

    def __init__(self, outputs: Mapping[tuple[str, ...], RunResult | str]) -> None:
        self._outputs = dict(outputs)

    def which(self, program: str) -> str | None:
        return f"/recorded/{program}" if any(k[0] == program for k in self._outputs) else None

    def run(self, argv: Sequence[str], timeout: float = 30.0) -> RunResult:
        key = tuple(argv)
        for n in range(len(key), 0, -1):
            hit = self._outputs.get(key[:n])
            if hit is not None:
                if isinstance(hit, str):
                    return RunResult(key, 0, hit, "")
                return hit
        raise ToolMissing(f"{argv[0]} not found")

    def start(self, argv: Sequence[str], stdout: IO[Any] | int | None = DEVNULL,
              stderr: IO[Any] | int | None = DEVNULL, umask: int = -1
              ) -> subprocess.Popen[bytes]:
        # recorded output cannot stand in for a live process
        raise ToolMissing(f"{argv[0] if argv else 'program'} not found (recorded runner)")


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")
