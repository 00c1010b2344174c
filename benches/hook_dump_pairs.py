"""The 10 MB JSON tool call's hook against its floor, one ``json_dumps(..., indent=2)``, in process pairs.

The hook must write the document's ``indent=2`` text (that is what it stores); everything else it
does (measuring, the preview, the notice, the storage frame) is its overhead over that floor. Each
pair runs two fresh processes, alternating which goes first: one times the hook (default options,
in-memory storage, inside a real Agent, as ``tool_call_pairs.py`` does), the other one
``json_dumps(document, indent=2)`` of the same document. Each child loads the API-records document
(``json_shapes``, 10,000,000 bytes compact) with ``json.loads`` before every round and reports the
median of its rounds and the growth of its resident high-water mark during the first round.
The dump's child keeps every text it made, as the hook's storage keeps what it stores (each round
of the hook has a tool use id of its own, so its storage keeps every result, as in a conversation):
a text dropped after its round gives its pages to the next one, which then writes into memory
already backed, a saving the hook (whose stored bytes stay) cannot have (``--drop-dumps`` measures
it so).

Printed: per pair, hook over dump and the hook's peak growth over the bytes stored; then the
medians over pairs, and (``--reference-pairs``, 0 to skip) the reference's hook over ours from
pairs of their own, as ``tool_call_pairs.py`` measures it.

Run: ``python benches/hook_dump_pairs.py [--pairs 15] [--rounds 3] [--reference-pairs 3] [--json OUT]``
(machine otherwise idle).
"""

from __future__ import annotations

import argparse
import statistics

from hook_rounds import add_rounds, api_document, child
from process_bench import parse_args, write_figures

_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from bench_plugin import _agent, _call, _plugin
from hook_rounds import timed_rounds
from strands_offload._native import json_dumps

member, path, rounds = sys.argv[1], sys.argv[2], int(sys.argv[4])
kept = []
if member in ("dump", "dump-dropped"):
    def run(content):
        text = json_dumps(content[0]["json"], indent=2)
        if member == "dump":
            kept.append(text)  # as the hook's storage keeps what it stores
        return text
    json_dumps({"warm": "up " * 50_000}, indent=2)
else:
    plugin = _plugin("reference" if member == "reference" else "native")
    agent = _agent(plugin)
    import itertools
    calls = itertools.count()
    def run(content):
        # A tool use id of its own per round: the storage keeps every result, as in a
        # conversation (one id again would free the previous round's bytes inside the timing).
        return _call(plugin, agent, content, f"tooluse_bench_{next(calls)}")
    run([{"json": {"warm": "up " * 50_000}}])  # lazy imports and first-use caches
timed_rounds(path, rounds, run, offloaded=not member.startswith("dump"))
"""


def _child(member: str, path: str, rounds: int) -> dict[str, float]:
    return child(_CHILD, member, path, rounds)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=15, help="hook/dump process pairs")
    add_rounds(parser)
    parser.add_argument("--reference-pairs", type=int, default=3, help="reference/ours process pairs (0: none)")
    parser.add_argument("--drop-dumps", action="store_true", help="the dump's child drops each text after its round")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv, _options)
    with api_document() as path:
        pairs = []
        for i in range(args.pairs):
            dump_member = "dump-dropped" if args.drop_dumps else "dump"
            order = (dump_member, "native") if i % 2 == 0 else ("native", dump_member)
            runs = {member: _child(member, path, args.rounds) for member in order}
            hook, dump = runs["native"], runs[dump_member]
            pair = {
                "hook": hook,
                "dump": dump,
                "hook_over_dump": hook["median"] / dump["median"],
                "hook_peak_over_stored": hook["growth"] / hook["stored"],
                "dump_peak_over_stored": dump["growth"] / dump["stored"],
            }
            pairs.append(pair)
            print(
                f"pair {i + 1}: hook {hook['median'] * 1e3:.1f} ms, dump {dump['median'] * 1e3:.1f} ms, "
                f"{pair['hook_over_dump']:.3f}x; hook peak growth {pair['hook_peak_over_stored']:.3f}x the stored "
                f"bytes (dump alone {pair['dump_peak_over_stored']:.3f}x)",
                flush=True,
            )
        references = []
        for i in range(args.reference_pairs):
            order = ("reference", "native") if i % 2 == 0 else ("native", "reference")
            runs = {member: _child(member, path, args.rounds) for member in order}
            references.append(runs["reference"]["median"] / runs["native"]["median"])
            print(f"reference pair {i + 1}: reference over ours {references[-1]:.1f}x", flush=True)
    summary: dict[str, object] = {
        "pairs": pairs,
        "median_hook_over_dump": statistics.median(p["hook_over_dump"] for p in pairs),
        "median_hook_peak_over_stored": statistics.median(p["hook_peak_over_stored"] for p in pairs),
        "max_hook_peak_over_stored": max(p["hook_peak_over_stored"] for p in pairs),
        "reference_over_ours": references,
    }
    line = (
        f"median over {len(pairs)} pairs: hook {summary['median_hook_over_dump']:.3f}x one indent=2 dump; "
        f"peak growth {summary['median_hook_peak_over_stored']:.3f}x the stored bytes "
        f"(at most {summary['max_hook_peak_over_stored']:.3f}x)"
    )
    if references:
        line += f"; reference over ours {statistics.median(references):.1f}x (median of {len(references)} pairs)"
    print(line)
    write_figures(args.json, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
