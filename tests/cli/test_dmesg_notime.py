"""A kernel log without timestamps (`dmesg --notime`): every line is its own event. The
fixtures are one real capture in two forms (tests/fixtures/artifacts/README.md)."""

from __future__ import annotations

from corescope.sources.kmsg_text import parse_dmesg
from support import FIXTURES, run_cli_json

ART = FIXTURES / "artifacts"


def test_notime_log_is_one_event_per_line() -> None:
    out = run_cli_json("events", "--file", str(ART / "dmesg_notime.txt"), "--all", "--json")
    lines = [ln for ln in (ART / "dmesg_notime.txt").read_text().splitlines() if ln.strip()]
    assert [e["raw"] for e in out["events"]] == lines
    # the ENA stall-and-reset sequence at the end: four events, not one
    tail = out["events"][-4:]
    assert [e["kind"] for e in tail] == ["nic_tx_stall", "nic_tx_stall", "nic_reset",
                                         "nic_reset"]
    assert all(e["lab"] and e["driver"] == "ena" for e in tail)
    assert tail[0]["fields"]["queue"] == 5
    assert "without a timestamp" in " ".join(out["diagnostics"])


def test_same_log_with_timestamps_gives_the_same_events() -> None:
    timed, _ = parse_dmesg((ART / "dmesg.txt").read_bytes())
    untimed, diags = parse_dmesg((ART / "dmesg_notime.txt").read_bytes())
    # dmesg indents the further lines of a multi-line message: only there do they differ
    merged = [r.message for r in timed if "\n" in r.message]
    assert merged == ["amd_pstate: The CPPC feature is supported but currently disabled by "
                      "the BIOS.\n"
                      "Please enable it if your BIOS has the CPPC option."]
    assert [m for r in timed for m in r.message.split("\n")] == [r.message for r in untimed]
    assert all(r.usec is None and r.wall is None for r in untimed)
    assert len(diags) == 1 and diags[0].line == 1


def test_an_unindented_untimed_line_after_a_timed_one_is_its_own_record() -> None:
    recs, _ = parse_dmesg(b"[    1.000000] first\n    continued\nno stamp at all\n")
    assert [r.message for r in recs] == ["first\ncontinued", "no stamp at all"]
    assert recs[1].usec is None
