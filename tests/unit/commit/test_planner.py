"""Group-commit planning: waves keep per-item order; chunks respect DynamoDB's limits."""

from __future__ import annotations

from dataclasses import dataclass

from lambda_inbox._commit.planner import chunk_wave, plan_waves


@dataclass(frozen=True)
class W:
    name: str
    items: frozenset[str]
    action_count: int = 2
    size: int = 1024


def w(name: str, *items: str, actions: int = 2, size: int = 1024) -> W:
    return W(name, frozenset(items), actions, size)


def names(groups: list[list[W]]) -> list[list[str]]:
    return [[work.name for work in group] for group in groups]


def test_disjoint_messages_share_one_wave() -> None:
    pending = [w(f"m{index}", f"inbox#{index}", f"sku#{index}") for index in range(10)]
    assert names(plan_waves(pending)) == [[f"m{index}" for index in range(10)]]


def test_only_colliding_messages_are_serialised_in_delivery_order() -> None:
    pending = [
        w("a1", "inbox#a1", "BALANCE#a"),
        w("b1", "inbox#b1", "BALANCE#b"),
        w("a2", "inbox#a2", "BALANCE#a"),
        w("c1", "inbox#c1", "BALANCE#c"),
        w("a3", "inbox#a3", "BALANCE#a"),
        w("b2", "inbox#b2", "BALANCE#b"),
    ]
    waves = plan_waves(pending)
    assert names(waves) == [["a1", "b1", "c1"], ["a2", "b2"], ["a3"]]
    for item in ("BALANCE#a", "BALANCE#b"):
        touching = [work.name for wave in waves for work in wave if item in work.items]
        delivered = [work.name for work in pending if item in work.items]
        assert touching == delivered


def test_a_message_goes_after_the_last_wave_of_any_of_its_items() -> None:
    pending = [
        w("x1", "X"),
        w("x2", "X"),
        w("y1", "Y"),
        w("xy", "X", "Y"),  # after x2 (wave 1), so wave 2
        w("y2", "Y"),  # after xy
    ]
    assert names(plan_waves(pending)) == [["x1", "y1"], ["x2"], ["xy"], ["y2"]]


def test_no_wave_holds_two_messages_on_one_item() -> None:
    pending = [w(f"m{index}", f"I{index % 3}", f"J{index % 4}") for index in range(24)]
    waves = plan_waves(pending)
    for wave in waves:
        seen: set[str] = set()
        for work in wave:
            assert seen.isdisjoint(work.items)
            seen |= work.items
    assert sorted(work.name for wave in waves for work in wave) == sorted(p.name for p in pending)


def test_empty_plan() -> None:
    assert plan_waves([]) == []
    assert chunk_wave([], max_actions=100, max_messages=25) == []


def test_chunks_respect_the_action_limit() -> None:
    wave = [w(f"m{index}", f"i{index}", actions=30) for index in range(7)]
    chunks = chunk_wave(wave, max_actions=100, max_messages=25)
    assert names(chunks) == [["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]
    assert all(sum(work.action_count for work in chunk) <= 100 for chunk in chunks)


def test_chunks_respect_the_message_limit() -> None:
    wave = [w(f"m{index}", f"i{index}") for index in range(7)]
    assert [len(chunk) for chunk in chunk_wave(wave, max_actions=100, max_messages=3)] == [3, 3, 1]
    assert [len(chunk) for chunk in chunk_wave(wave, max_actions=100, max_messages=1)] == [1] * 7


def test_chunks_respect_the_byte_limit() -> None:
    wave = [w(f"m{index}", f"i{index}", size=400) for index in range(5)]
    chunks = chunk_wave(wave, max_actions=100, max_messages=25, max_bytes=1000)
    assert names(chunks) == [["m0", "m1"], ["m2", "m3"], ["m4"]]


def test_a_single_oversized_work_still_gets_its_own_chunk() -> None:
    wave = [w("small", "a"), w("huge", "b", size=5000), w("after", "c")]
    chunks = chunk_wave(wave, max_actions=100, max_messages=25, max_bytes=1000)
    assert names(chunks) == [["small"], ["huge"], ["after"]]


def test_chunks_keep_wave_order_and_lose_nothing() -> None:
    wave = [w(f"m{index}", f"i{index}", actions=1 + index % 5) for index in range(40)]
    chunks = chunk_wave(wave, max_actions=10, max_messages=4)
    assert [work.name for chunk in chunks for work in chunk] == [work.name for work in wave]
    assert all(sum(work.action_count for work in chunk) <= 10 for chunk in chunks)
    assert all(len(chunk) <= 4 for chunk in chunks)


def test_works_sharing_an_item_never_share_a_chunk() -> None:
    wave = [w("a", "X", "i1"), w("b", "i2"), w("c", "X", "i3")]
    assert names(chunk_wave(wave, max_actions=100, max_messages=25)) == [["a", "b"], ["c"]]
