"""Other engines' figures beside ours (`bench solve`, `bench evaluate`), published or run in the
same bench: given by the threads they ran on, or under another label where the threads were not
stated."""

from __future__ import annotations


def over_theirs(ours: float, by_threads: dict[str, float]) -> dict[str, float]:
    """Our figure over theirs, for each of their thread counts (or labels)."""
    return {threads: ours / theirs for threads, theirs in by_threads.items()}


def ratio_words(ratios: dict[str, float]) -> str:
    """`over_theirs`'s ratios as words: "0.53x its 1, 1.02x its 2" ("0.30x it" for a label
    that is no thread count)."""
    return ", ".join(
        f"{ratio:.2f}x its {threads}" if threads.isdigit() else f"{ratio:.2f}x it"
        for threads, ratio in ratios.items()
    )
