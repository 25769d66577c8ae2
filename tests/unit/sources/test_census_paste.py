"""Census pastes: /proc/cgroups dumps pasted from a terminal, with the commands that printed
them. Written here in the formats: /proc/cgroups as kernel/cgroup/cgroup-v1.c prints it
(tab-separated, `#subsys_name` header), bash prompts (`$ `, `# `, `user@host:~$ `,
`[root@host ~]# `), `wc -l` printing a bare number."""

from __future__ import annotations

from corescope.sources.artifacts import census_loop


def _cgroups(memory: int, hierarchy: int = 4) -> str:
    return ("#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\ncpu\t1\t88\t1\n"
            f"memory\t{hierarchy}\t{memory}\t1\npids\t8\t90\t1\n")


def _parse(text: str):  # type: ignore[no-untyped-def]
    kind = census_loop.sniff(text)
    assert kind is not None
    return census_loop.parse(text.encode(), kind, "paste.txt")


def test_an_unrelated_count_is_not_the_live_count() -> None:
    text = (f"[root@node-7 ~]# cat /proc/cgroups\n{_cgroups(22563)}"
            "[root@node-7 ~]# docker ps -a | wc -l\n75\n")
    p = _parse(text)
    assert [(c.kernel_count, c.live, c.dying) for c in p.censuses] == [(22563, None, None)]
    assert any("docker ps -a | wc -l" in d.message for d in p.diagnostics)


def test_the_memory_directory_count_is_the_live_count() -> None:
    text = (f"$ cat /proc/cgroups\n{_cgroups(22563)}"
            "$ find /sys/fs/cgroup/memory -type d | wc -l\n75\n")
    p = _parse(text)
    assert [(c.kernel_count, c.live, c.dying) for c in p.censuses] == [(22563, 75, 22488)]
    text = (f"root@ip-10-1-2-3:~# ls -d /sys/fs/cgroup/memory/*/ | wc -l\n74\n"
            f"root@ip-10-1-2-3:~# cat /proc/cgroups\n{_cgroups(22563)}")
    assert [(c.live, c.dying) for c in _parse(text).censuses] == [(74, 22489)]
    text = (f"$ cat /proc/cgroups\n{_cgroups(900)}"
            "$ find /sys/fs/cgroup/memory -mindepth 1 -type d | wc -l\n99\n")
    assert [(c.live, c.dying) for c in _parse(text).censuses] == [(100, 800)]


def test_every_dump_in_a_paste_is_kept_in_order() -> None:
    text = (f"# cat /proc/cgroups\n{_cgroups(1000)}"
            "# find /sys/fs/cgroup/memory -type d | wc -l\n40\n"
            "# sleep 600; cat /proc/cgroups\n" + _cgroups(1600)
            + "# find /sys/fs/cgroup/memory -type d | wc -l\n41\n")
    p = _parse(text)
    assert [(c.kernel_count, c.live) for c in p.censuses] == [(1000, 40), (1600, 41)]


def test_two_bare_dumps_without_commands_are_both_kept() -> None:
    p = _parse(_cgroups(500) + _cgroups(650))
    assert [c.kernel_count for c in p.censuses] == [500, 650]


def test_the_documented_loop_still_reads_its_bare_number() -> None:
    text = (f"Mon Nov 30 15:34:54 UTC 2026\n{_cgroups(50)}11\n"
            f"Mon Nov 30 15:35:04 UTC 2026\n{_cgroups(77)}13\n")
    p = _parse(text)
    assert [(c.kernel_count, c.live, c.dying) for c in p.censuses] == [(50, 11, 39),
                                                                        (77, 13, 64)]
