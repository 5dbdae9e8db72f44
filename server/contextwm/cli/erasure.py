"""The erasure commands: forget the items that match, and print the receipt of what went."""

from __future__ import annotations

import argparse
import dataclasses

from contextwm_client import Client, ErasureReceipt

from contextwm.cli import render


def forget(client: Client, args: argparse.Namespace) -> int:
    # Without --metadata, --since or --until the client refuses before calling (ValueError).
    receipt = client.forget(
        args.conversation, metadata=dict(args.metadata), since=args.since, until=args.until
    )
    print_receipt(receipt, as_json=args.json)
    return 0


def print_receipt(receipt: ErasureReceipt, *, as_json: bool = False) -> None:
    """The receipt: one line per conversation, the counts that are not zero, the digest."""
    if as_json:
        print(render.to_json(receipt))
        return
    for c in receipt.conversations:
        seqs = render.seq_ranges([s for first, last in c.seqs for s in range(first, last + 1)])
        what = "deleted whole" if c.deleted else f"seqs {seqs}"
        erased = render.counted(c.items, "item")
        print(f"{receipt.namespace}/{c.conversation_id}: {erased} erased ({what})")
    counts = dataclasses.asdict(receipt.counts)
    print(
        f"erased {render.counted(counts.pop('items'), 'item')} at {receipt.erased_at.isoformat()}"
    )
    shown = [f"{name.replace('_', ' ')} {n}" for name, n in counts.items() if n]
    if shown:
        print("removed or rewritten: " + ", ".join(shown))
    print(f"digest: sha256:{receipt.digest}")
